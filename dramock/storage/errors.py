"""What the revision log raises: the storage outcomes the API server turns into Kubernetes errors."""

from __future__ import annotations


class StorageError(Exception):
    pass


class KeyExists(StorageError):
    pass


class KeyNotFound(StorageError):
    pass


class RevisionConflict(StorageError):
    """The caller's expected revision is not the key's current revision."""

    def __init__(self, current: int):
        super().__init__(f"current revision is {current}")
        self.current = current


class StaleRead(RevisionConflict):
    """Shared mode: a write without a precondition was computed from this replica's copy of the key, and
    another replica has written the key since. The caller catches up (`catch_up`) and computes it again, as
    upstream's GuaranteedUpdate retries on a stale cache."""


class Compacted(StorageError):
    """The requested revision is older than the oldest revision still kept."""

    def __init__(self, requested: int, oldest: int):
        super().__init__(f"revision {requested} is compacted (oldest {oldest})")
        self.requested = requested
        self.oldest = oldest


class FutureRevision(StorageError):
    def __init__(self, requested: int, current: int):
        super().__init__(f"revision {requested} is newer than the current revision {current}")
        self.requested = requested
        self.current = current


class StorageFailure(StorageError):
    """The database failed. The message is safe to show a client; the detail went to the log."""
