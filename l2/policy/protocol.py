"""Isaac-GR00T's policy-server protocol: ZeroMQ REQ/REP over TCP, every message one msgpack map.

Written from the protocol's description (docs/evaluate.md), not from GR00T's code:

- a numpy array travels as ``{"__ndarray_class__": true, "as_npy": <numpy.save bytes, no pickle>}``;
- a request is ``{"endpoint": NAME, "data": {...}}`` plus ``"api_token"`` when the server has one;
- endpoints: ``ping``, ``reset`` (``{"options": ...}``), ``get_modality_config``, ``get_action``
  (``{"observation": ..., "options": ...}``, answered with the list ``[action, info]``) and ``kill``;
- a failure is answered with ``{"error": MESSAGE}`` and the server goes on serving.
"""

from __future__ import annotations

import functools
import io
import threading
from collections.abc import Callable
from typing import Any, Protocol

import msgpack
import numpy as np
import zmq

DEFAULT_PORT = 5555
"""GR00T's default port."""
NDARRAY_TAG = "__ndarray_class__"
MODALITY_CONFIG_TAG = "__ModalityConfig_class__"
"""GR00T's ``get_modality_config`` answers its configs tagged so; they are decoded to plain dicts."""
ENDPOINTS = ("ping", "reset", "get_modality_config", "get_action", "kill")


class ProtocolError(RuntimeError):
    """A failed call, in one line naming the server's address."""


class ServerError(ProtocolError):
    """The server answered ``{"error": ...}``."""


class ServerTimeout(ProtocolError):
    """No answer within the client's timeout (server down, unreachable or busy)."""


# ------------------------------------------------------------------------------------------ encoding
def _npy_header(fields: dict) -> bytes:
    """``numpy.save``'s header for the fields of ``numpy.lib.format.header_data_from_array_1_0``."""
    header = io.BytesIO()
    try:
        np.lib.format.write_array_header_1_0(header, fields)
    except ValueError:  # a header over 64 KiB (a huge structured dtype): format 2.0
        header = io.BytesIO()
        np.lib.format.write_array_header_2_0(header, fields)
    return header.getvalue()


@functools.lru_cache(maxsize=256)
def _cached_header(descr: str, fortran_order: bool, shape: tuple[int, ...]) -> bytes:
    """:func:`_npy_header` of a plain dtype: the same few arrays travel every step, and numpy writes each header
    through ``repr`` (and reads it back through ``ast``), which costs more than copying a state vector."""
    return _npy_header({"descr": descr, "fortran_order": fortran_order, "shape": shape})


def _npy_bytes(array: np.ndarray) -> memoryview:
    """``numpy.save``'s bytes of ``array`` (its header, then the data in memory order), copying the data once.

    The buffer comes from numpy's allocator: a fresh ``bytes`` or ``bytearray`` of a camera frame's size is
    mapped memory, and touching its pages costs ten times the copy."""
    if array.dtype.hasobject:
        raise ValueError("object arrays cannot be sent (they would need pickle)")
    if not (array.flags.c_contiguous or array.flags.f_contiguous):
        array = np.ascontiguousarray(array)
    fields = np.lib.format.header_data_from_array_1_0(array)
    plain = isinstance(fields["descr"], str)
    head = _cached_header(fields["descr"], fields["fortran_order"], fields["shape"]) if plain else _npy_header(fields)
    out = np.empty(len(head) + array.nbytes, np.uint8)
    out[: len(head)] = np.frombuffer(head, np.uint8)
    if array.nbytes:
        in_memory_order = array if array.flags.c_contiguous else array.T  # Fortran order: its transpose is C
        out[len(head) :] = in_memory_order.reshape(-1).view(np.uint8)
    return memoryview(out)


def _encode(obj: Any) -> Any:
    if isinstance(obj, np.ndarray):
        return {NDARRAY_TAG: True, "as_npy": _npy_bytes(obj)}
    if isinstance(obj, np.generic):
        return obj.item()
    raise TypeError(f"cannot send a {type(obj).__name__} over the policy protocol")


@functools.lru_cache(maxsize=256)
def _parse_header(head: bytes) -> tuple[tuple[int, ...], bool, np.dtype]:
    """(shape, fortran order, dtype) of a ``.npy`` header (magic and length included)."""
    stream = io.BytesIO(head)
    version = np.lib.format.read_magic(stream)
    read = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
    return read(stream)


def _load_npy(data: bytes) -> np.ndarray:
    """An array from ``.npy`` bytes, as a read-only view of them (``numpy.load`` would copy the frames once more)."""
    if len(data) < 10 or data[:6] != b"\x93NUMPY" or data[6] not in (1, 2):
        return np.load(io.BytesIO(data), allow_pickle=False)  # format 3.0 (utf-8 names), or not .npy at all
    size = 2 if data[6] == 1 else 4
    end = 8 + size + int.from_bytes(data[8 : 8 + size], "little")
    shape, fortran, dtype = _parse_header(bytes(data[:end]))
    if dtype.hasobject:
        raise ValueError("object arrays are not accepted (they would need pickle)")
    array = np.frombuffer(data, dtype=dtype, count=int(np.prod(shape, dtype=np.int64)), offset=end)
    return array.reshape(shape, order="F" if fortran else "C")


def _decode(obj: dict) -> Any:
    if obj.get(NDARRAY_TAG) is True:
        return _load_npy(obj["as_npy"])
    if obj.get(MODALITY_CONFIG_TAG) is True:
        return obj.get("as_json", {})
    return obj


def _nbytes(obj: Any) -> int:
    """The array bytes in a message, to size msgpack's buffer once (growing it copies megabytes of frames)."""
    if isinstance(obj, np.ndarray):
        return obj.nbytes + 128
    if isinstance(obj, dict):
        return sum(_nbytes(v) for v in obj.values())
    if isinstance(obj, list | tuple):
        return sum(_nbytes(v) for v in obj)
    return 0


def pack(obj: Any) -> bytes:
    """One message: msgpack with numpy arrays as tagged ``.npy`` bytes."""
    packer = msgpack.Packer(default=_encode, use_bin_type=True, buf_size=max(_nbytes(obj) + 4096, 1 << 16))
    return packer.pack(obj)


def unpack(data: bytes) -> Any:
    """Inverse of :func:`pack`. Arrays come back as read-only views of the message (copy one to write into it);
    object arrays are refused (no pickle)."""
    return msgpack.unpackb(data, object_hook=_decode, raw=False, strict_map_key=False)


# ------------------------------------------------------------------------------------------- client
class PolicyClient:
    """A REQ client. Every call waits at most ``timeout_s``; after a timeout the socket is made anew (a REQ
    socket that sent without an answer cannot send again)."""

    def __init__(
        self,
        host: str = "localhost",
        port: int = DEFAULT_PORT,
        timeout_s: float = 30.0,
        api_token: str | None = None,
        context: zmq.Context | None = None,
    ):
        self.address = f"tcp://{host}:{port}"
        self.timeout_s = timeout_s
        self.api_token = api_token
        self._context = context or zmq.Context.instance()
        self._socket: zmq.Socket | None = None

    def _connect(self) -> zmq.Socket:
        if self._socket is None:
            sock = self._context.socket(zmq.REQ)
            ms = max(1, int(self.timeout_s * 1000))
            sock.setsockopt(zmq.RCVTIMEO, ms)
            sock.setsockopt(zmq.SNDTIMEO, ms)
            sock.setsockopt(zmq.LINGER, 0)
            sock.connect(self.address)
            self._socket = sock
        return self._socket

    def call(self, endpoint: str, data: dict | None = None) -> Any:
        """Send one request and return the answer; :class:`ServerError` for ``{"error": ...}``."""
        request: dict[str, Any] = {"endpoint": endpoint}
        if data is not None:
            request["data"] = data
        if self.api_token is not None:
            request["api_token"] = self.api_token
        sock = self._connect()
        try:
            sock.send(pack(request))
            answer = unpack(sock.recv(copy=False).buffer)  # no copy of the message into a bytes object
        except zmq.Again:
            self.close()
            raise ServerTimeout(
                f"no answer from the policy server at {self.address} to '{endpoint}' within "
                f"{self.timeout_s:g} s (is it running? --timeout to wait longer)"
            ) from None
        if isinstance(answer, dict) and "error" in answer:
            raise ServerError(f"policy server at {self.address}: '{endpoint}' failed: {answer['error']}")
        return answer

    def ping(self) -> dict:
        return self.call("ping")

    def reset(self, options: dict | None = None) -> dict:
        return self.call("reset", {"options": options})

    def get_modality_config(self) -> dict:
        return self.call("get_modality_config")

    def get_action(self, observation: dict, options: dict | None = None) -> tuple[dict, dict]:
        answer = self.call("get_action", {"observation": observation, "options": options})
        if not (isinstance(answer, list | tuple) and len(answer) == 2 and isinstance(answer[0], dict)):
            raise ProtocolError(
                f"policy server at {self.address}: 'get_action' answered {type(answer).__name__}, "
                "expected the list [action, info]"
            )
        return answer[0], answer[1] if isinstance(answer[1], dict) else {}

    def kill(self) -> None:
        self.call("kill")

    def close(self) -> None:
        if self._socket is not None:
            self._socket.close(linger=0)
            self._socket = None


# ------------------------------------------------------------------------------------------- server
class Policy(Protocol):
    """What a server serves (GR00T's ``BasePolicy`` calls, by name)."""

    def get_action(self, observation: dict, options: dict | None = None) -> tuple[dict, dict]: ...

    def reset(self, options: dict | None = None) -> dict: ...

    def get_modality_config(self) -> dict: ...


class PolicyServer:
    """A REP server for one :class:`Policy`, bound at construction (``port=0``: a free port, see ``port``)."""

    def __init__(
        self,
        policy: Policy,
        host: str = "*",
        port: int = DEFAULT_PORT,
        api_token: str | None = None,
        context: zmq.Context | None = None,
        on_request: Callable[[str], None] | None = None,
    ):
        self.policy = policy
        self.api_token = api_token
        self.on_request = on_request
        self._socket = (context or zmq.Context.instance()).socket(zmq.REP)
        self._socket.setsockopt(zmq.LINGER, 0)
        if port == 0:
            self.port = self._socket.bind_to_random_port(f"tcp://{host}")
        else:
            self._socket.bind(f"tcp://{host}:{port}")
            self.port = port
        self.running = False

    def handle(self, message: bytes | memoryview) -> Any:
        """The answer to one request message (never raises: failures become ``{"error": ...}``)."""
        try:
            request = unpack(message)
        except Exception as exc:  # noqa: BLE001 - any undecodable message is the client's error
            return {"error": f"undecodable request ({type(exc).__name__}: {exc})"}
        if not isinstance(request, dict):
            return {"error": f"a request is a map with 'endpoint' and 'data', got {type(request).__name__}"}
        if self.api_token is not None and request.get("api_token") != self.api_token:
            return {"error": "Unauthorized: invalid API token"}
        endpoint = request.get("endpoint", "get_action")
        data = request.get("data") or {}
        if self.on_request is not None:
            self.on_request(endpoint)
        try:
            if endpoint == "ping":
                return {"status": "ok", "message": "Server is running"}
            if endpoint == "kill":
                self.running = False
                return {"status": "ok", "message": "Server is stopping"}
            if endpoint == "reset":
                return self.policy.reset(data.get("options"))
            if endpoint == "get_modality_config":
                return self.policy.get_modality_config()
            if endpoint == "get_action":
                action, info = self.policy.get_action(data.get("observation"), data.get("options"))
                return [action, info]
            return {"error": f"unknown endpoint {endpoint!r} (known: {', '.join(ENDPOINTS)})"}
        except Exception as exc:  # noqa: BLE001 - the policy's error goes back to the client, the server lives on
            return {"error": f"{type(exc).__name__}: {exc}"}

    def serve_forever(self) -> None:
        """Answer requests until a ``kill`` request (or :meth:`stop` from another thread)."""
        self.running = True
        poller = zmq.Poller()
        poller.register(self._socket, zmq.POLLIN)
        try:
            while self.running:
                if not poller.poll(100):
                    continue
                answer = self.handle(self._socket.recv(copy=False).buffer)
                try:
                    self._socket.send(pack(answer))
                except TypeError as exc:  # the policy returned something msgpack cannot carry
                    self._socket.send(pack({"error": f"unsendable answer: {exc}"}))
        finally:
            self._socket.close(linger=0)

    def stop(self) -> None:
        self.running = False

    def start_thread(self) -> threading.Thread:
        """Serve in a daemon thread (an in-process server, e.g. ``--policy replay:DATASET``)."""
        thread = threading.Thread(target=self.serve_forever, name="policy-server", daemon=True)
        thread.start()
        return thread
