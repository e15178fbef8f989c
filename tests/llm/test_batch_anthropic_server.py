"""The test server's Message Batches API (tests/anthropic_batches.py) in Anthropic's shapes:
what the Anthropic batch provider is tested against must behave as the real API does."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

import pytest

from anthropic_server import AnthropicServer, message

KEY = "sk-ant-test-batches-0123456789"
MODEL = "claude-haiku-4-5"


def call(server: AnthropicServer, method: str, path: str, body: Any = None) -> tuple[int, Any]:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(
        server.url + path,
        data=data,
        method=method,
        headers={"x-api-key": KEY, "anthropic-version": "2023-06-01"},
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as reply:
            text = reply.read().decode()
            status = reply.status
    except urllib.error.HTTPError as exc:
        text, status = exc.read().decode(), exc.code
    if path.endswith("/results") and status == 200:
        return status, [json.loads(line) for line in text.splitlines()]
    return status, json.loads(text)


def params(text: str) -> dict[str, Any]:
    return {"model": MODEL, "max_tokens": 64, "messages": [{"role": "user", "content": text}]}


def requests(*ids: str) -> dict[str, Any]:
    return {"requests": [{"custom_id": i, "params": params(f"Say {i}")} for i in ids]}


def test_a_batch_is_created_held_polled_and_its_results_come_in_any_order() -> None:
    with AnthropicServer(api_key=KEY) as server:
        server.batches.hold()
        status, batch = call(server, "POST", "/v1/messages/batches", requests("a", "b", "c"))
        assert status == 200
        assert batch["type"] == "message_batch"
        assert batch["id"].startswith("msgbatch_")
        assert batch["processing_status"] == "in_progress"
        assert batch["results_url"] is None
        assert batch["request_counts"] == {
            "processing": 3,
            "succeeded": 0,
            "errored": 0,
            "canceled": 0,
            "expired": 0,
        }
        path = f"/v1/messages/batches/{batch['id']}"
        assert call(server, "GET", path)[1]["processing_status"] == "in_progress"
        assert call(server, "GET", path + "/results")[0] == 404  # not ended yet
        server.batches.release()
        _, ended = call(server, "GET", path)
        assert ended["processing_status"] == "ended"
        assert ended["request_counts"]["succeeded"] == 3
        assert ended["results_url"] == f"{server.url}{path}/results"
        status, lines = call(server, "GET", path + "/results")
    assert status == 200
    assert [line["custom_id"] for line in lines] == ["c", "b", "a"]
    assert all(line["result"]["type"] == "succeeded" for line in lines)
    by_id = {line["custom_id"]: line["result"]["message"] for line in lines}
    assert by_id["a"] == message(params("Say a"))  # judged as the synchronous route judges
    assert server.batches.submissions == {"a": 1, "b": 1, "c": 1}


def test_errored_expired_and_canceled_results() -> None:
    with AnthropicServer(api_key=KEY) as server:
        server.batches.error_ids = {"b"}
        _, first = call(server, "POST", "/v1/messages/batches", requests("a", "b"))
        _, lines = call(server, "GET", f"/v1/messages/batches/{first['id']}/results")
        errored = {line["custom_id"]: line["result"] for line in lines}["b"]
        assert errored["type"] == "errored"
        assert errored["error"]["type"] == "error"
        assert errored["error"]["error"]["type"] == "invalid_request_error"
        _, again = call(server, "POST", "/v1/messages/batches", requests("b"))  # errors once
        assert (
            call(server, "GET", f"/v1/messages/batches/{again['id']}")[1]["request_counts"][
                "succeeded"
            ]
            == 1
        )
        assert server.batches.submissions["b"] == 2

        server.batches.expire = True
        _, expired = call(server, "POST", "/v1/messages/batches", requests("c"))
        _, state = call(server, "GET", f"/v1/messages/batches/{expired['id']}")
        assert state["request_counts"]["expired"] == 1
        server.batches.expire = False

        server.batches.hold()
        _, held = call(server, "POST", "/v1/messages/batches", requests("d"))
        path = f"/v1/messages/batches/{held['id']}"
        _, canceling = call(server, "POST", path + "/cancel")
        assert canceling["processing_status"] == "canceling"
        assert canceling["cancel_initiated_at"] is not None
        _, canceled = call(server, "GET", path)
        assert canceled["processing_status"] == "ended"
        assert canceled["request_counts"]["canceled"] == 1
        _, lines = call(server, "GET", path + "/results")
    assert lines == [{"custom_id": "d", "result": {"type": "canceled"}}]


@pytest.mark.parametrize(
    "body",
    [
        {"requests": []},
        {"requests": [{"custom_id": "bad id!", "params": params("x")}]},
        {"requests": [{"custom_id": "a", "params": params("x")}] * 2},
        {"requests": [{"custom_id": "a", "params": {"model": MODEL, "messages": []}}]},
    ],
    ids=["empty", "bad-custom-id", "duplicate-custom-id", "no-max-tokens"],
)
def test_a_request_the_api_refuses_is_a_400(body: dict[str, Any]) -> None:
    with AnthropicServer(api_key=KEY) as server:
        status, reply = call(server, "POST", "/v1/messages/batches", body)
    assert status == 400
    assert reply["error"]["type"] == "invalid_request_error"
    assert server.batches.created == 0


def test_the_batch_routes_demand_the_key() -> None:
    with AnthropicServer(api_key="another-key") as server:
        status, reply = call(server, "POST", "/v1/messages/batches", requests("a"))
        assert call(server, "GET", "/v1/messages/batches/msgbatch_nope")[0] == 401
    assert status == 401
    assert reply["error"]["type"] == "authentication_error"
    assert KEY not in json.dumps(reply)  # the wrong key is not echoed by the batch routes
    assert server.batches.created == 0
