"""The dramock pytest plugin (loaded through the `pytest11` entry point wherever dramock is installed).

Fixtures:

- `dramock_cluster` (session): `dramock serve` on a free port with a fresh data dir; a
  `dramock.testing.cluster.DramockCluster` with `.url`, `.kubeconfig`, `.node_dirs(node)`, `.kubectl(*args)`,
  `.request(...)`, `.api_client` (official client, if installed), `.inject(rule)` / `.injected(rule)` /
  `.clear_faults()` and `.injected_count()`.
- `dramock_namespace` (per test): a fresh namespace, deleted after the test.

Options: `--dramock-nodes N` (default 1), `--dramock-feature-gates A=true,B=false`, `--dramock-inject RULE`
(repeatable), `--dramock-no-example-driver`, `--dramock-keep` (keep the data dir and log when a test failed).
A failing test that used the cluster gets the server log of its run in its report.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator

import pytest

from dramock.testing.cluster import DramockCluster

_CLUSTER = pytest.StashKey["DramockCluster"]()
_LOG_START = pytest.StashKey[int]()
_KEPT = pytest.StashKey[str]()
LOG_SECTION_LINES = 400


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("dramock", "dramock cluster for DRA driver tests")
    group.addoption("--dramock-nodes", type=int, default=1, metavar="N",
                    help="simulated nodes of the dramock_cluster fixture (default 1)")
    group.addoption("--dramock-feature-gates", default="", metavar="A=true,B=false",
                    help="feature gates of the dramock_cluster fixture, as kube-apiserver takes them")
    group.addoption("--dramock-inject", action="append", default=[], metavar="RULE",
                    help="a fault rule the cluster starts with (repeatable; see dramock.faults)")
    group.addoption("--dramock-no-example-driver", action="store_true",
                    help="do not run the example driver (gpu.example.com) on the simulated nodes")
    group.addoption("--dramock-keep", action="store_true",
                    help="keep the cluster's data dir and server log when a test failed")


@pytest.fixture(scope="session")
def dramock_cluster(request: pytest.FixtureRequest) -> Iterator[DramockCluster]:
    """A dramock cluster (API server, controllers, scheduler, kubelet shims) for the whole session."""
    from dramock.testing.server import free_port, start_server

    opt = request.config.getoption
    # A short base dir: plugin socket paths must stay under the Unix limit of ~107 bytes.
    base = tempfile.mkdtemp(prefix="dramock-")
    secure_port = free_port()  # the components use their own identities there, as on a cluster
    args = ["--nodes", str(opt("--dramock-nodes")), "--secure-port", str(secure_port)]
    if opt("--dramock-feature-gates"):
        args += ["--feature-gates", opt("--dramock-feature-gates")]
    for rule in opt("--dramock-inject"):
        args += ["--inject", rule]
    if opt("--dramock-no-example-driver"):
        args.append("--no-example-driver")
    try:
        server = start_server(base, *args, command="serve")
    except BaseException:
        _finish(request, base, failed=True)
        raise
    cluster = DramockCluster(server, opt("--dramock-nodes"), example_driver=not opt("--dramock-no-example-driver"),
                             secure_port=secure_port)
    request.config.stash[_CLUSTER] = cluster
    try:
        cluster.wait_ready()
        yield cluster
    finally:
        del request.config.stash[_CLUSTER]
        cluster.close()
        _finish(request, base, failed=request.session.testsfailed > 0)


def _finish(request: pytest.FixtureRequest, base: str, failed: bool) -> None:
    if failed and request.config.getoption("--dramock-keep"):
        request.config.stash[_KEPT] = base  # reported in the terminal summary (teardown output is captured)
        return
    shutil.rmtree(base, ignore_errors=True)


def pytest_terminal_summary(terminalreporter, config: pytest.Config) -> None:
    kept = config.stash.get(_KEPT, None)
    if kept:
        terminalreporter.write_line(f"dramock: kept the data dir and server log of the failed run in {kept}")


@pytest.fixture
def dramock_namespace(dramock_cluster: DramockCluster, request: pytest.FixtureRequest) -> Iterator[str]:
    """A namespace of the test's own in the session's cluster; deleted afterwards."""
    name = dramock_cluster.create_namespace(request.node.name)
    try:
        yield name
    finally:
        dramock_cluster.delete_namespace(name)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    cluster = item.config.stash.get(_CLUSTER, None)
    item.stash[_LOG_START] = cluster.log_size() if cluster is not None else 0


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    outcome = yield
    report = outcome.get_result()
    if not report.failed or "dramock_cluster" not in getattr(item, "fixturenames", ()):
        return
    cluster = item.config.stash.get(_CLUSTER, None)
    if cluster is None:
        return
    try:
        lines = cluster.log_text(item.stash.get(_LOG_START, 0)).splitlines()
    except OSError:
        return
    if len(lines) > LOG_SECTION_LINES:
        lines = [f"... ({len(lines) - LOG_SECTION_LINES} earlier lines in {cluster.log_path})",
                 *lines[-LOG_SECTION_LINES:]]
    report.sections.append((f"dramock server log ({report.when})", "\n".join(lines)))
