"""Object UIDs (dramock/uids.py): canonical random UUIDs, never repeated, also across a fork."""

import os
import re
import uuid

import pytest

from dramock import uids

CANONICAL = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")


def test_uids_are_canonical_version_4_uuids():
    for _ in range(3 * uids._BATCH):  # across refills of the pool
        text = uids.new_uid()
        assert CANONICAL.match(text), text
        parsed = uuid.UUID(text)
        assert parsed.version == 4 and parsed.variant == uuid.RFC_4122 and str(parsed) == text


def test_uids_do_not_repeat():
    made = [uids.new_uid() for _ in range(5 * uids._BATCH)]
    assert len(set(made)) == len(made)


@pytest.mark.e2e  # forks
def test_a_forked_child_does_not_repeat_its_parents_next_uid():
    uids.new_uid()  # the pool now holds UIDs the parent will hand out next
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report its first UID and leave at once
        os.write(write, uids.new_uid().encode())
        os._exit(0)
    os.close(write)
    try:
        child = os.read(read, 64).decode()
    finally:
        os.close(read)
        os.waitpid(pid, 0)
    assert CANONICAL.match(child)
    assert child != uids.new_uid()
