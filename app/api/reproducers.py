"""/api/errors/{id}/reproducer: a record's reproducer, its recent runs and drift."""

from fastapi import APIRouter

from app.api.responses import problems
from app.app_error import not_found
from app.records import service as records
from app.reproducers import drift, runner
from app.reproducers.generation import bulk
from app.serving.deps import SessionDep, SettingsDep
from app.wire.base import Extended
from app.wire.reproducers import ReproducerOut

router = APIRouter(prefix="/api/errors", tags=["reproducers"], responses=problems(404, 422))


@router.get("/{record_id}/reproducer", response_model=ReproducerOut)
def read_reproducer(session: SessionDep, settings: SettingsDep, record_id: str) -> ReproducerOut:
    """The reproducer script of a record (curated, or generated from its raise site), its
    target, devices, recent runs and drift."""
    if records.get_record(session, record_id) is None:
        raise not_found(f"record {record_id}")
    info = runner.reproducer_info(settings, record_id)
    runs = runner.latest_runs(session, record_id)
    latest_drift = drift.latest_drift(session, record_id)
    if info is not None:
        return ReproducerOut.model_validate(Extended(info, runs=runs, drift=latest_drift))
    stored = bulk.stored_script(session, record_id)
    if stored is None:
        raise not_found(f"a reproducer for record {record_id}")
    return ReproducerOut.model_validate(
        Extended(
            stored,
            generated=True,
            calls=stored,
            target={"package": stored.package, "version": stored.version, "module": stored.module},
            devices=["cpu"],
            runs=runs,
            drift=latest_drift,
        )
    )
