"""The client's HTTP/1.1 pool for writes: what it sends, the answers it reads, and its connections,
against a raw server that controls every byte."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubesched.remote.client import ApiClient, ApiConnectionError, RemoteConflict
from kubesched.remote.config import ClientConfig
from kubesched.remote.http1 import Http1Pool

#: Reads one request head and body; returns the bytes to answer with (None: say nothing).
Answerer = Callable[[bytes, bytes], Awaitable[bytes | None]]


class RawServer:
    """An HTTP/1.1 server over plain sockets: every request is read whole (Content-Length) and
    answered with the bytes ``answer`` returns; the connection is closed after an answer that
    says ``Connection: close``."""

    def __init__(self, answer: Answerer) -> None:
        self.answer = answer
        self.requests: list[tuple[bytes, bytes]] = []
        self.connections = 0
        self.open = 0
        self.most_open = 0
        self.port = 0
        self._server: asyncio.Server | None = None

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        assert self._server is not None
        self._server.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        self.open += 1
        self.most_open = max(self.most_open, self.open)
        try:
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except (asyncio.IncompleteReadError, ConnectionError):
                    return
                length = 0
                for line in head.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":", 1)[1])
                body = await reader.readexactly(length) if length else b""
                self.requests.append((head, body))
                out = await self.answer(head, body)
                if out is None:
                    continue
                writer.write(out)
                await writer.drain()
                if b"connection: close" in out.lower():
                    return
        finally:
            self.open -= 1
            writer.close()


SUCCESS = b'{"kind":"Status","status":"Success"}'


def ok(body: bytes = SUCCESS, status: str = "201 Created", extra: str = "") -> bytes:
    head = f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\n{extra}"
    head += f"Content-Length: {len(body)}\r\n\r\n"
    return head.encode() + body


def chunked(body: bytes, pieces: int) -> bytes:
    size = max(1, -(-len(body) // pieces))
    out = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
    for i in range(0, len(body), size):
        part = body[i : i + size]
        out += b"%x\r\n%s\r\n" % (len(part), part)
    return out + b"0\r\n\r\n"


def run(coro: Awaitable[Any]) -> Any:
    async def main() -> Any:
        return await coro

    return asyncio.run(main())


def with_server(answer: Answerer, test: Callable[[RawServer], Awaitable[Any]]) -> Any:
    async def main() -> Any:
        server = RawServer(answer)
        await server.start()
        try:
            return await test(server)
        finally:
            await server.stop()

    return asyncio.run(main())


def test_a_write_is_one_head_with_the_fixed_headers_and_the_body():
    async def answer(_head: bytes, _body: bytes) -> bytes:
        return ok()

    async def test(server: RawServer) -> None:
        pool = Http1Pool(f"http://127.0.0.1:{server.port}/prefix/", headers={"User-Agent": "kubesched/0.1"})
        status, body, retry = await pool.request(
            "POST",
            "/api/v1/namespaces/default/pods/web-1/binding",
            body=b'{"kind":"Binding"}',
            content_type="application/json",
            authorization="Bearer abc",
        )
        assert (status, body, retry) == (201, b'{"kind":"Status","status":"Success"}', None)
        head, sent = server.requests[0]
        lines = head.decode().split("\r\n")
        assert lines[0] == "POST /prefix/api/v1/namespaces/default/pods/web-1/binding HTTP/1.1"
        assert f"Host: 127.0.0.1:{server.port}" in lines
        assert "User-Agent: kubesched/0.1" in lines
        assert "Authorization: Bearer abc" in lines
        assert "Content-Type: application/json" in lines
        assert "Content-Length: 18" in lines
        assert not any(line.lower().startswith("accept-encoding") for line in lines)
        assert sent == b'{"kind":"Binding"}'
        pool.close()

    with_server(answer, test)


def test_sequential_writes_share_one_kept_alive_connection_and_a_closing_answer_is_not_reused():
    async def answer(_head: bytes, body: bytes) -> bytes:
        return ok(extra="Connection: close\r\n" if body == b"last" else "")

    async def test(server: RawServer) -> None:
        pool = Http1Pool(f"http://127.0.0.1:{server.port}")
        for _ in range(20):
            await pool.request("POST", "/x", body=b"{}")
        assert server.connections == 1
        await pool.request("POST", "/x", body=b"last")
        await asyncio.sleep(0.05)
        assert pool.connections == 0
        await pool.request("POST", "/x", body=b"{}")
        assert server.connections == 2
        pool.close()

    with_server(answer, test)


@settings(max_examples=25, deadline=None)
@given(body=st.binary(min_size=0, max_size=3000), pieces=st.integers(1, 7), split=st.integers(1, 50))
def test_answers_read_whole_in_any_framing_and_any_split(body: bytes, pieces: int, split: int):
    """A chunked or a Content-Length answer, arriving in pieces of any size, gives back the body
    as sent, and the connection stays usable for the next request."""

    async def answer(_head: bytes, sent: bytes) -> bytes:
        return chunked(body, pieces) if sent == b"chunked" and body else ok(body, "200 OK")

    class Slicing(RawServer):
        async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            orig = writer.write

            def write(data: bytes) -> None:
                for i in range(0, len(data), split):
                    orig(data[i : i + split])

            writer.write = write  # type: ignore[method-assign]
            await super()._serve(reader, writer)

    async def main() -> None:
        server = Slicing(answer)
        await server.start()
        pool = Http1Pool(f"http://127.0.0.1:{server.port}")
        try:
            for framing in (b"chunked", b"length"):
                status, got, _ = await pool.request("POST", "/x", body=framing)
                assert status == 200 and got == body
            assert server.connections == 1
        finally:
            pool.close()
            await server.stop()

    asyncio.run(main())


def test_no_more_connections_than_the_limit_and_every_request_answered():
    async def answer(_head: bytes, _body: bytes) -> bytes:
        await asyncio.sleep(0.01)
        return ok()

    async def test(server: RawServer) -> None:
        pool = Http1Pool(f"http://127.0.0.1:{server.port}", limit=3)
        answers = await asyncio.gather(*(pool.request("POST", "/x", body=b"{}") for _ in range(30)))
        assert [a[0] for a in answers] == [201] * 30
        assert server.most_open <= 3 and len(server.requests) == 30
        pool.close()

    with_server(answer, test)


def test_connections_idle_too_long_are_closed_when_the_next_request_comes():
    async def answer(_head: bytes, _body: bytes) -> bytes:
        await asyncio.sleep(0.02)
        return ok()

    async def test(server: RawServer) -> None:
        pool = Http1Pool(f"http://127.0.0.1:{server.port}", idle_timeout=0.2)
        await asyncio.gather(*(pool.request("POST", "/x", body=b"{}") for _ in range(5)))
        assert pool.connections == 5  # a burst opened five
        await pool.request("POST", "/x", body=b"{}")
        assert pool.connections == 5  # reused while fresh
        await asyncio.sleep(0.3)
        await pool.request("POST", "/x", body=b"{}")
        assert pool.connections == 1  # the stale ones closed, one opened for this request
        assert server.connections == 6
        pool.close()

    with_server(answer, test)


def test_a_request_not_answered_in_time_fails_and_its_connection_is_dropped():
    async def answer(_head: bytes, body: bytes) -> bytes | None:
        return None if body == b"never" else ok()

    async def test(server: RawServer) -> None:
        pool = Http1Pool(f"http://127.0.0.1:{server.port}")
        with pytest.raises(TimeoutError):
            await pool.request("POST", "/x", body=b"never", timeout=0.2)
        assert pool.connections == 0
        assert (await pool.request("POST", "/x", body=b"{}"))[0] == 201
        assert server.connections == 2
        pool.close()

    with_server(answer, test)


def test_a_cancelled_request_does_not_leave_its_connection_out_of_step():
    async def answer(_head: bytes, body: bytes) -> bytes:
        if body == b"slow":
            await asyncio.sleep(0.3)
        return ok(body, "200 OK")

    async def test(server: RawServer) -> None:
        pool = Http1Pool(f"http://127.0.0.1:{server.port}", limit=1)
        slow = asyncio.ensure_future(pool.request("POST", "/x", body=b"slow"))
        await asyncio.sleep(0.05)
        slow.cancel()
        with pytest.raises(asyncio.CancelledError):
            await slow
        # The late answer to "slow" must not be taken for this one's.
        assert (await pool.request("POST", "/x", body=b"next"))[1] == b"next"
        pool.close()

    with_server(answer, test)


def test_a_connection_the_server_drops_is_a_connection_error_then_a_fresh_one_is_opened():
    async def answer(_head: bytes, body: bytes) -> bytes:
        # A malformed status line for "bad"; the server then keeps talking nonsense.
        return b"NOT HTTP\r\n\r\n" if body == b"bad" else ok()

    async def test(server: RawServer) -> None:
        pool = Http1Pool(f"http://127.0.0.1:{server.port}")
        with pytest.raises(ConnectionError):
            await pool.request("POST", "/x", body=b"bad")
        assert (await pool.request("POST", "/x", body=b"{}"))[0] == 201
        pool.close()

    with_server(answer, test)


def test_the_client_sends_writes_through_the_pool_and_reads_its_status_answers(loop_thread):
    conflict = b'{"kind":"Status","code":409,"reason":"Conflict","message":"changed"}'

    async def answer(head: bytes, _body: bytes) -> bytes:
        if head.startswith(b"PUT"):
            return ok(conflict, "409 Conflict")
        if head.startswith(b"GET"):
            return ok(b'{"kind":"NodeList","items":[]}', "200 OK")
        return ok(b'{"kind":"Binding"}')

    async def test(server: RawServer) -> None:
        config = ClientConfig(server=f"http://127.0.0.1:{server.port}", authorization="Bearer t")
        client = await ApiClient.connect(config)
        try:
            assert client.writes is not None
            assert await client.request("POST", "/b", body={"a": 1}) == {"kind": "Binding"}
            assert await client.request("POST", "/b", body={"a": 1}, decode=False) is None
            with pytest.raises(RemoteConflict, match="changed"):
                await client.request("PUT", "/b", body={"a": 1})
            assert await client.get("/api/v1/nodes") == {"kind": "NodeList", "items": []}
            writes = [h for h, _ in server.requests if not h.startswith(b"GET")]
            assert len(writes) == 3 and all(b"Authorization: Bearer t\r\n" in h for h in writes)
            assert client.writes.connections == 1
        finally:
            await client.close()

    with_server(answer, test)


def test_a_write_to_a_server_that_is_not_there_is_a_connection_error():
    async def main() -> None:
        server = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        server.close()
        await server.wait_closed()
        client = await ApiClient.connect(ClientConfig(server=f"http://127.0.0.1:{port}"))
        try:
            with pytest.raises(ApiConnectionError):
                await client.request("POST", "/b", body={})
        finally:
            await client.close()

    asyncio.run(main())
