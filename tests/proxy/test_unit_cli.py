"""xce-proxy's command line, systemd unit, log lines and health endpoint."""

from __future__ import annotations

import io
import json
import urllib.error
import urllib.request
from collections.abc import Iterator

import pytest

from compiler.core.secrets import Redactor
from reconciler.cmds.proxy import main
from reconciler.proxy.logs import EventLog
from reconciler.proxy.metrics import Metrics, serve_metrics


def test_the_unit_runs_the_proxy_and_holds_no_secret(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BURST_API_TOKEN", "canary-token-5150")
    assert main(["unit", "proxy-a", "--state", "postgresql://xce:pw-canary-77@db:5432/xce",
                 "--workdir", "/srv/xce", "--metrics", "127.0.0.1:9464"]) == 0
    text = capsys.readouterr().out
    lines = text.splitlines()
    for wanted in ("Type=simple", "Restart=on-failure", "KillSignal=SIGTERM", "User=xce-proxy",
                   "EnvironmentFile=-/etc/xce/proxy.env", "WorkingDirectory=/srv/xce"):
        assert wanted in lines
    [start] = [line for line in lines if line.startswith("ExecStart=")]
    assert start.endswith(" run proxy-a --state postgresql://xce@db:5432/xce --workdir "
                          "/srv/xce --metrics 127.0.0.1:9464 --log-format json")
    assert "pw-canary-77" not in text and "canary-token-5150" not in text


def test_usage_mistakes_are_clear_errors(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run"]) == 1
    assert "error[XCE860]" in capsys.readouterr().err
    assert main(["unit", "proxy-a", "--metrics", "nowhere"]) == 1
    assert "--metrics 'nowhere' is not HOST:PORT" in capsys.readouterr().err
    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0 and capsys.readouterr().out.startswith("xce-proxy (xce-gitops ")


def test_log_lines_are_structured_and_redacted(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XCE_TEST_LOG_SECRET", "hush-4242")
    stream = io.StringIO()
    log = EventLog("proxy-a", "json", stream, Redactor.of(["env:XCE_TEST_LOG_SECRET"]))
    log.event("call", provider="p", error="token hush-4242 refused", password="literal")
    doc = json.loads(stream.getvalue())
    assert (doc["event"], doc["proxy"], doc["provider"]) == ("call", "proxy-a", "p")
    assert doc["error"] == "token (sensitive) refused" and doc["password"] == "(sensitive)"
    text = io.StringIO()
    EventLog("proxy-a", "text", text, log.redactor).event("lease-taken", provider="p",
                                                          why="hush-4242 here")
    assert " event=lease-taken proxy=proxy-a provider=p why=\"(sensitive) here\"" in \
        text.getvalue() and "hush" not in text.getvalue()


@pytest.fixture
def metrics() -> Iterator[tuple[Metrics, str]]:
    figures = Metrics()
    server = serve_metrics(figures, ("127.0.0.1", 0))
    try:
        yield figures, f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()


def get(url: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=10) as reply:
            return reply.status, reply.read()
    except urllib.error.HTTPError as err:
        return err.code, err.read()


def test_healthz_says_whether_the_store_answers(metrics: tuple[Metrics, str]) -> None:
    figures, base = metrics
    figures.set_leases(2)
    figures.health.config_seq = 7
    assert get(base + "/healthz") == (200, b'{"leases":2,"config_seq":7,"store":"ok"}')
    figures.health.store_ok = False
    status, body = get(base + "/healthz")
    assert status == 503 and json.loads(body)["store"] == "unreachable"
    figures.latency.labels("shared-fs", "create").observe(0.02)
    figures.set_queue({"shared-fs": 3}, ("shared-fs", "idle"))
    status, body = get(base + "/metrics")
    text = body.decode()
    assert status == 200 and "xce_proxy_leases_held 2.0" in text
    assert 'xce_proxy_queue_depth{provider="shared-fs"} 3.0' in text
    assert 'xce_proxy_queue_depth{provider="idle"} 0.0' in text
    assert 'xce_proxy_call_seconds_count{provider="shared-fs",verb="create"} 1.0' in text
    assert get(base + "/other")[0] == 404
