"""What a draft means to the person who hit it, read from the same release: the settings
that reach the raise site, the advice upstream's own message gives, and the trigger in words.

A pasted error asks "which setting do I change?", and the release usually answers it: the
guard and the message name values (`max_model_len`), and the release's own settings files
say which flag, config field or environment variable each one is, with its help and
default. Every statement carries where it was read (file and line at the harvested ref),
and a setting is listed only when the release defines it: nothing is guessed.

The settings table is built once per release (app/harvest/settings_table.py), the names at a
site are resolved against it (app/harvest/site_settings.py), and this module words what they
tell. The release that changed a site is told at read time from its locations
(app.records.locations), which know every harvested release.
"""

import re
from collections.abc import Sequence
from typing import Any

from app.harvest.entrypoints import add_entry_points
from app.harvest.settings_table import Setting, SettingsTable, pinned_source, settings_table
from app.harvest.site_settings import DOTTED_NAME, ModuleIndex, Resolver, read_function
from app.harvest.sites import Draft, ModuleFacts
from app.upstreams.base import UpstreamProject

MAX_SETTINGS = 6
MAX_ADVICE = 4
_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_.]*)\}")
_BACKTICKED = re.compile(r"`([^`\s]{2,80})`")
_FLAG = re.compile(r"(?<![\w-])(--[a-z][a-z0-9-]+)")
# The sentence openings with which a message tells its reader what to do.
_ADVICE = re.compile(
    r"^(?:try|please|consider|use|set|increase|decrease|reduce|lower|raise|make sure|"
    r"ensure|check|install|upgrade|downgrade|pass|specify|enable|disable|add|remove|"
    r"see|refer|run|you (?:can|may|should|need|must|might)|to (?:fix|avoid|use|enable|"
    r"disable|resolve|run|serve|load)|if you|call|restart|update|switch|change|avoid|"
    r"do not|don't|make|alternatively|otherwise)\b",
    re.IGNORECASE,
)
# Advice inside a sentence: `X is not supported, please use Y instead.`
_ADVICE_INSIDE = re.compile(
    r"(?:^|[,;:(]\s*|\s-\s|\bso\s|\bor\s)(?:please|try|consider|use|set|make sure|"
    r"you (?:can|may|should|need|must|might))\b|\bplease\b|\binstead\b",
    re.IGNORECASE,
)
# A setting named bare in the message: `max_model_len`, `VLLM_PORT` (an underscore in it,
# so that a common word is never taken for one).
_BARE_SETTING = re.compile(
    r"(?<![\w.{/-])([a-z][a-z0-9]*_[a-z0-9_]*[a-z0-9]|[A-Z][A-Z0-9]*_[A-Z0-9_]*[A-Z0-9])(?![\w}(/])"
)
_URL = re.compile(r"https?://\S+")
# A sentence ends at `. ` before a capital, or where a placeholder runs into the next one
# (`{estimated_msg}Try increasing ...`).
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z`(\"'])|(?<=\})(?=[A-Z][a-z])")


def _sentences(message: str) -> list[str]:
    return [part.strip() for part in _SENTENCE_END.split(message) if part.strip()]


def explain(
    draft: Draft,
    index: ModuleIndex,
    table: SettingsTable,
    project: UpstreamProject,
    repo: str,
    ref: str,
) -> dict[str, Any]:
    """The explanation of one draft: settings, advice and trigger, each with its source."""
    record = draft.record
    resolver = Resolver(table, index, draft)
    reads = read_function(index, resolver.function_span, draft, project.parameters_are_settings)
    message = record["errorMessage"]
    guard = draft.site.guard if draft.site else None
    listed: dict[str, dict[str, Any]] = {}
    resolved: dict[str, str] = {}  # name in the code -> what the user types

    def take(setting: Setting | None, code_name: str, via: str) -> None:
        if setting is None:
            return
        resolved.setdefault(code_name, setting.typed_as)
        if setting.typed_as not in listed and len(listed) < MAX_SETTINGS:
            listed[setting.typed_as] = setting.document(repo, ref, via)

    def from_code(name: str, via: str) -> None:
        root = name.split(".", 1)[0]  # `port.isdigit` reads the local `port`
        found = [*reads.parameters_of(root), *reads.envs.get(root, [])]
        for setting in found:
            take(setting, name, via)
        if not found:
            take(resolver.resolve(name), name, via)

    for setting in reads.envs.get("", []):
        take(setting, setting.name, "guard")
    for name in DOTTED_NAME.findall(guard or ""):
        from_code(name, "guard")
    for name in _PLACEHOLDER.findall(message):
        from_code(name, "message")
    prose = _PLACEHOLDER.sub(" ", _URL.sub(" ", message))
    for text in [*_FLAG.findall(message), *_BACKTICKED.findall(message)]:
        named = reads.parameters.get(text.split("=", 1)[0].strip())
        take(named or resolver.named(text), text, "message")
    for text in _BARE_SETTING.findall(prose):
        take(reads.parameters.get(text) or resolver.named_bare(text), text, "message")
    advice: list[dict[str, Any]] = []
    for sentence in _sentences(message):
        url = _URL.search(sentence)
        telling = _ADVICE.match(sentence) or _ADVICE_INSIDE.search(sentence)
        if not (telling or url) or len(advice) >= MAX_ADVICE:
            continue
        names = [
            *_FLAG.findall(sentence),
            *_BACKTICKED.findall(sentence),
            *_BARE_SETTING.findall(_PLACEHOLDER.sub(" ", sentence)),
        ]
        linked = [resolved[text] for text in names if text in resolved]
        advice.append(
            {
                "text": sentence,
                "settings": list(dict.fromkeys(linked)),
                "url": url.group(0).rstrip(".,;)") if url else None,
            }
        )
    site = pinned_source(repo, ref, record["filePath"], record.get("lineNumber") or 0)
    trigger = None
    if guard:
        where = [
            f"`{name}` is `{typed}`"
            for name, typed in resolved.items()
            if name in guard and name != typed
        ]
        text = f"raised when `{guard}`" + (", where " + ", ".join(where) if where else "")
        trigger = {"text": text, "source": site}
    return {"settings": list(listed.values()), "advice": advice, "trigger": trigger, "source": site}


def add_explanations(
    drafts: Sequence[Draft],
    modules: Sequence[ModuleFacts],
    project: UpstreamProject | None,
    repo: str,
    ref: str,
) -> None:
    """Put each draft's explanation into its code context, beside the guard it reads."""
    if project is None:
        return
    table = settings_table(modules, project)
    by_path = {facts.file_path: facts for facts in modules}
    indexes: dict[str, ModuleIndex] = {}
    for draft in drafts:
        path = draft.record["filePath"]
        if path not in by_path:
            continue
        if path not in indexes:
            indexes[path] = ModuleIndex(by_path[path])
        draft.context["explanation"] = explain(draft, indexes[path], table, project, repo, ref)
    add_entry_points(drafts, modules, project, repo, ref)
