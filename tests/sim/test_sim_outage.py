"""The sim's outage and slow-reply scripts: a provider off the network (connection refused, then back on the
same port) and the `trickle` fault (a slow but flowing reply, streamed or held back whole)."""

from __future__ import annotations

import time

import httpx
import pytest

from modelpool.sim import Fault, FleetThread, expected_text

BODY = {"model": "m1", "messages": [{"role": "user", "content": "hello"}]}


def test_a_provider_taken_down_refuses_connections_and_comes_back_on_its_port(fleet: FleetThread) -> None:
    url = fleet.base_url("beta") + "/chat/completions"
    with httpx.Client(timeout=5) as http:
        assert http.post(url, json=BODY).status_code == 200  # leaves a keep-alive connection in the pool
        fleet.set_down("beta")
        try:
            with pytest.raises(httpx.TransportError):  # the pooled connection was dropped too
                http.post(url, json=BODY)
            with pytest.raises(httpx.ConnectError):
                httpx.post(url, json=BODY, timeout=5)
        finally:
            fleet.set_down("beta", False)
        assert fleet.base_url("beta") + "/chat/completions" == url
        reply = http.post(url, json=BODY).json()
    assert reply["choices"][0]["message"]["content"] == expected_text("beta", "m1", 6)


@pytest.mark.parametrize("stream", [False, True], ids=["once", "stream"])
def test_a_trickle_paces_the_answer_and_still_delivers_it_whole(fleet: FleetThread, stream: bool) -> None:
    fleet.set_faults("alpha", [Fault("trickle", delay=0.05)])
    t0 = time.monotonic()
    url = fleet.base_url("alpha") + "/chat/completions"
    resp = httpx.post(url, json={**BODY, "stream": stream}, timeout=10)
    elapsed = time.monotonic() - t0
    assert elapsed >= 6 * 0.05  # a lower bound: six tokens, one every 50 ms
    if stream:
        deltas = [
            line
            for line in resp.text.splitlines()
            if line.startswith("data: {") and '"content":"' in line and '"content":""' not in line
        ]
        assert len(deltas) == 6 and resp.text.rstrip().endswith("data: [DONE]")
    else:
        assert resp.json()["choices"][0]["message"]["content"] == expected_text("alpha", "m1", 6)
    assert fleet.calls("alpha")[-1].outcome == "trickle"
