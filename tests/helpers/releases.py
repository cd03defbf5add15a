"""The cache of real upstream releases that tests share: ERRKB_CACHE_DIR, else the user's
cache (~/.cache/errkb), where vLLM, SGLang and torch releases are downloaded once."""

from app.config import Settings
from app.upstreams.release_cache import Upstream

RELEASES = Upstream(Settings().cache_dir)
