# Transitional alias: errors moved to dramock/errors.py (admission and storage users sit below apiserver).
from dramock.errors import *  # noqa: F401,F403
from dramock.errors import STALE_OBJECT, TOO_OLD_RESOURCE_VERSION, APIError  # noqa: F401
