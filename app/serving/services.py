"""The services an app serves with, built once by create_app (app.main) and handed to the
routes and to app.serving by one dependency (app.serving.deps.ServicesDep): one typed object,
so that what a route reaches is named and checked, where attributes set one by one on
app.state were neither."""

from dataclasses import dataclass

from sqlalchemy import Engine

from app.config import Settings
from app.curation.hits import HitCounter
from app.lifecycle.readiness import Readiness
from app.matching.matcher import Matcher
from app.ops.metrics import Metrics
from app.serving.budget import PasteBudget, PastesInFlight
from app.serving.loop_turns import LoopTurns
from app.serving.replies import Replies


@dataclass(frozen=True, slots=True)
class Services:
    """What the app's requests share: the settings it was built with, the store, the match
    index, the metrics, the start-up steps, the hits counted, the paste budgets, the kept
    replies and the event loop's turns."""

    settings: Settings
    engine: Engine
    matcher: Matcher
    metrics: Metrics
    readiness: Readiness
    hits: HitCounter
    paste_budget: PasteBudget
    pastes_in_flight: PastesInFlight
    replies: Replies
    loop_turns: LoopTurns
