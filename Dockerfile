# errkb: build a wheel in one stage, run it as a non-root user in the next.
FROM python:3.11-slim AS build
WORKDIR /src
COPY pyproject.toml README.md ./
COPY app ./app
RUN python -m venv /venv && /venv/bin/pip install --no-cache-dir --upgrade pip \
    && /venv/bin/pip wheel --no-cache-dir --wheel-dir /wheels .

FROM python:3.11-slim
RUN useradd --create-home --uid 10001 errkb
COPY --from=build /wheels /wheels
RUN python -m venv /venv && /venv/bin/pip install --no-cache-dir /wheels/*.whl && rm -rf /wheels
WORKDIR /srv/errkb
COPY --chown=errkb:errkb data ./data
COPY --chown=errkb:errkb migrations ./migrations
COPY --chown=errkb:errkb reproducers ./reproducers
RUN mkdir -p var && chown errkb:errkb var
USER errkb
ENV PATH=/venv/bin:$PATH \
    ERRKB_PROJECT_ROOT=/srv/errkb \
    ERRKB_DATABASE_URL=sqlite:////srv/errkb/var/errkb.db
EXPOSE 8000
HEALTHCHECK CMD python -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/healthz')"
CMD ["errkb", "serve", "--host", "0.0.0.0", "--port", "8000"]
