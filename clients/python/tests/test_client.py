"""The numpy client against real ``sluice serve`` processes: every batch equals ``sluice run``'s
rows, ranks split the run, the state resumes, and failures (tokens, paths, redirects, dropped
connections, 5xx, a killed server) end in the right batches or one clear exception."""

from __future__ import annotations

import re
import signal
import time

import numpy as np
import pytest
from check import assert_matches_oracle, check_kjt
from conftest import TOKEN
from proxies import FlakyProxy, Redirector

import sluice
from sluice import AuthError, BadRequestError, Client, NotFoundError, ServerError, SluiceBatches, SluiceError, StateError, UnreachableError
from sluice.http import fail


def test_info_and_one_batch(server, job):
    c = Client(server.url, TOKEN)
    info = c.info()
    assert info["batches"] == job.batches == 24 and info["batchSize"] == 256 and info["epochs"] == 2
    b = c.batch(5)
    assert (b.seq, b.epoch, b.rows) == (5, 0, 256)
    assert c.batch(job.batches) is None  # past the end: the server's end marker
    check_kjt(vars(b))


@pytest.mark.parametrize("prefetch", [0, 1, 3])
def test_every_batch_equals_sluice_run(server, job, prefetch):
    it = SluiceBatches(server.url, TOKEN, rank=0, world=1, prefetch=prefetch)
    got = list(it)
    assert [b.seq for b in got] == list(range(job.batches))  # in order
    assert_matches_oracle(got, job.oracle(), job.batches)
    assert it.state_dict()["seq"] == job.batches


def test_ranks_split_the_run(server, job):
    parts = [list(SluiceBatches(server.url, TOKEN, rank=r, world=3)) for r in range(3)]
    for r, part in enumerate(parts):
        assert [b.seq for b in part] == list(range(r, job.batches, 3))
    assert_matches_oracle([b for p in parts for b in p], job.oracle(), job.batches)


def test_rank_and_world_come_from_torchrun_variables(server, monkeypatch):
    monkeypatch.setenv("RANK", "1")
    monkeypatch.setenv("WORLD_SIZE", "4")
    it = SluiceBatches(server.url, TOKEN)
    assert (it.rank, it.world) == (1, 4)
    assert [b.seq for b in it][:3] == [1, 5, 9]


@pytest.mark.parametrize("k", [1, 4, 7])
def test_the_state_resumes_with_another_world_size(server, job, k):
    # Two ranks each take k batches; the job resumes on three ranks with the rest, exactly.
    ranks = [SluiceBatches(server.url, TOKEN, rank=r, world=2) for r in range(2)]
    taken = []
    for it in ranks:
        g = iter(it)
        taken += [next(g) for _ in range(k)]
    states = [it.state_dict() for it in ranks]
    assert states[0] == states[1] and states[0]["seq"] == 2 * k
    assert states[0]["epoch"] == (2 * k) // 12 and states[0]["job"] == Client(server.url, TOKEN).job
    rest = []
    for r in range(3):
        it = SluiceBatches(server.url, TOKEN, rank=r, world=3)
        it.load_state_dict(states[0])
        rest += list(it)
    assert sorted(b.seq for b in rest) == list(range(2 * k, job.batches))
    assert_matches_oracle(taken + rest, job.oracle(), job.batches)


def test_each_batch_carries_the_state_after_it(server):
    it = SluiceBatches(server.url, TOKEN, rank=1, world=2)
    g = iter(it)
    b0, b1 = next(g), next(g)
    assert (b0.seq, b1.seq) == (1, 3)
    assert b1.state == it.state_dict() and b1.state["seq"] == 4


def test_a_state_for_another_job_or_malformed_is_refused(server, job):
    it = SluiceBatches(server.url, TOKEN)
    good = it.state_dict()
    with pytest.raises(StateError, match=r"saved for job 0123456789abcdef but .* serves job [0-9a-f]{16}: another plan or data set"):
        it.load_state_dict({**good, "job": "0123456789abcdef"})
    with pytest.raises(StateError, match="seq must be a non-negative integer, got -1"):
        it.load_state_dict({**good, "seq": -1})
    with pytest.raises(StateError, match="version 9 is not 1"):
        it.load_state_dict({**good, "version": 9})
    with pytest.raises(StateError, match="a dict from state_dict"):
        it.load_state_dict([1, 2])  # type: ignore[arg-type]


def test_a_missing_or_wrong_token_is_an_auth_error(server, monkeypatch):
    monkeypatch.delenv("SLUICE_TOKEN", raising=False)
    for token in (None, "wrong"):
        with pytest.raises(AuthError) as e:
            Client(server.url, token, retries=3).batch(0)
        assert e.value.status == 401
        assert str(e.value) == f"{server.url}/v1/batches/0: HTTP 401: missing or wrong bearer token (give the server's token: token=... or the SLUICE_TOKEN environment variable)"
    monkeypatch.setenv("SLUICE_TOKEN", TOKEN)
    assert Client(server.url).batch(0).seq == 0  # the token from the environment


def test_a_wrong_path_is_not_found_and_a_bad_seq_is_a_bad_request(server):
    with pytest.raises(NotFoundError, match=r"HTTP 404: no such path /api/v1/batches/0 \(is .*/api the base URL of a sluice serve\?\)"):
        Client(server.url + "/api", TOKEN).batch(0)
    c = Client(server.url, TOKEN)
    r = c.transport.get("/v1/batches/abc", "application/msgpack")
    e = fail(r, server.url)
    assert isinstance(e, BadRequestError) and 'batch seq must be a non-negative integer, got "abc"' in str(e)
    with pytest.raises(SluiceError, match="seq must be a non-negative integer, got -3"):
        c.batch(-3)


def test_bad_arguments_are_one_line_each():
    for bad, msg in [
        (dict(urls="ftp://x"), "is not an http(s) URL"),
        (dict(urls="http://h:99999"), "port that is not a number"),
        (dict(urls=[]), "no server URL given"),
        (dict(urls="http://h", retries=-1), "retries must be a non-negative integer"),
        (dict(urls="http://h", rank=2, world=2), "0 <= rank < world"),
        (dict(urls="http://h", rank=0), "give both rank and world"),
        (dict(urls="http://h", start=-1), "start must be a non-negative integer"),
        # http.client said "Invalid header value b'Bearer s3cret\\n'" (a ValueError, the token in it).
        (dict(urls="http://h", token="s3cret\n"), "the token holds a line break (read from a file with its newline?) at position 6 of 7"),
        (dict(urls="http://h", token="a\x00b"), "the token holds a control character at position 1 of 3"),
        # The query ended up in the middle of every request URL: "http://h?x=1/v1/info".
        (dict(urls="http://h?x=1"), "has a query or fragment: give the base URL of a sluice serve"),
    ]:
        with pytest.raises(SluiceError, match=re.escape(msg)):
            SluiceBatches(**bad)


def test_redirects_are_followed(server, job):
    r = Redirector(server.url)
    try:
        got = list(SluiceBatches(r.url, TOKEN, rank=0, world=1))
        assert_matches_oracle(got, job.oracle(), job.batches)
        assert r.hits >= 2 * (job.batches + 1)  # each request: the relative hop, then the server
    finally:
        r.close()
    loop = Redirector(server.url, loop=True)
    try:
        with pytest.raises(SluiceError, match="more than 5 redirects"):
            Client(loop.url, TOKEN).batch(0)
    finally:
        loop.close()


def test_dropped_connections_cut_bodies_and_503_are_retried(server, job):
    p = FlakyProxy(server.url, ["reset", "cut", "503", "reset", "cut"])
    try:
        got = list(SluiceBatches(p.url, TOKEN, rank=0, world=1, prefetch=0, retry_delay=0.01))
        assert_matches_oracle(got, job.oracle(), job.batches)
        assert p.connections >= 6
    finally:
        p.close()


def test_retries_end_in_one_clear_error(server):
    p = FlakyProxy(server.url, ["503"] * 3)
    try:
        t0 = time.monotonic()
        with pytest.raises(ServerError) as e:
            Client(p.url, TOKEN, retries=2, retry_delay=0.05).batch(0)
        assert time.monotonic() - t0 >= 0.05 + 0.1  # the back-off doubles
        assert e.value.status == 503 and str(e.value).endswith("HTTP 503: overloaded, try again")
    finally:
        p.close()
    import socket

    s = socket.socket()
    s.bind(("127.0.0.1", 0))  # a port nothing listens on
    dead = f"http://127.0.0.1:{s.getsockname()[1]}"
    try:
        with pytest.raises(UnreachableError, match=rf"{dead}/v1/batches/0: cannot reach the server \(connection refused\) after 3 attempts"):
            Client(dead, TOKEN, retries=2, retry_delay=0.01).batch(0)
    finally:
        s.close()


def test_https_to_a_plain_http_server_says_so_not_in_openssl_words(server):
    url = server.url.replace("http://", "https://")
    with pytest.raises(UnreachableError) as e:
        Client(url, TOKEN, retries=0).info()
    assert str(e.value) == (
        f"{url}/v1/info: cannot reach the server (the TLS handshake failed: is it an http:// server? "
        "sluice serve speaks plain HTTP unless a proxy in front adds TLS) after 1 attempts"
    )


def test_a_killed_server_fails_over_to_another(job, start_server):
    a, b = start_server(), start_server()
    it = SluiceBatches([a.url, b.url], TOKEN, rank=0, world=1, prefetch=0, retry_delay=0.01)
    got = []
    for batch in it:
        got.append(batch)
        if len(got) == 5:
            a.stop(signal.SIGKILL)  # a real kill: no goodbye on its sockets
    assert_matches_oracle(got, job.oracle(), job.batches)


def test_servers_of_different_jobs_are_refused(job, server, tmp_path):
    import json

    from conftest import Server

    other_plan = tmp_path / "plan.json"
    other_plan.write_text(json.dumps({**job.plan, "batchSize": 128}))
    other = Server(other_plan, job.data, TOKEN)
    try:
        with pytest.raises(SluiceError, match="the URLs serve different jobs"):
            Client([server.url, other.url], TOKEN).info()
    finally:
        other.stop()


def test_the_numpy_client_does_not_import_torch():
    import subprocess
    import sys

    code = "import sys, sluice; sluice.Client('http://127.0.0.1:1'); print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env={"PYTHONPATH": str(sluice.__path__[0] + "/..")})
    assert out.stdout.strip() == "False", out.stderr
    assert np.__name__ == "numpy"
