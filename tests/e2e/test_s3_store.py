"""The S3 store (tether-store-s3.so) against real S3 servers on 127.0.0.1:
SeaweedFS and moto (authenticated), each started by the tests
(s3servers.py).

  - the store contract (`tether-conformance --store s3://BUCKET`) on a
    versioned and an unversioned bucket of each server;
  - faults, one store call at a time through tests/tools/store-tool.c: a
    wrong secret, an unknown key id, a missing bucket, a 403 on one object
    (a moto IAM policy: SeaweedFS's identities grant per bucket, not per
    key), a bad session token, and, through FaultProxy below, a server that
    cuts answers short mid-body (mid-listing too), throttles (503
    SlowDown), or says ExpiredToken. Transient faults must be retried and
    recovered from; past max attempts (5) the call fails with one line
    naming the URI; a 4xx is never retried.

ExpiredToken comes from the proxy: neither server issues temporary
credentials that expire within a test. It checks the mapping of AWS's
answer (400 ExpiredToken, as AWS sends it) to TETHER_EAUTH.
"""
import json
import os
import re
import socket
import subprocess
import threading
from pathlib import Path

import pytest

from conftest import TETHER_BIN, check_sanitizers

BUILD = Path(TETHER_BIN).resolve().parent
CONFORMANCE = BUILD / "tether-conformance"
STORE_TOOL = BUILD / "tests" / "store-tool"
OPTIONS = json.dumps({"allow_http": True})
MAX_ATTEMPTS = 5

# The contract's two checks that no S3 server can pass, because S3's version
# token is the ETag, and a PutObject's ETag is the MD5 of its bytes: writing
# the same bytes twice gives the same token, so an If-Match (or a copy
# if-match) holding the first write's token still matches after the second.
# Every other check must pass.
CONTENT_TOKEN_CHECKS = {
    "version: every write gives a new version token, even of the same bytes",
    "copy: to a new key; TETHER_EREFUSED onto an existing key; if_match honoured",
}


def _env(srv, endpoint=None, **extra):
    env = srv.env(os.environ)
    env["TETHER_MODULE_PATH"] = str(BUILD)
    if endpoint:
        env["AWS_ENDPOINT_URL_S3"] = endpoint
        env["AWS_ENDPOINT_URL"] = endpoint
    env.update(extra)
    return env


def tool(srv, uri, *args, stdin=b"", endpoint=None, options=OPTIONS, **extra):
    """store-tool URI OP ARGS: (exit code, stdout bytes, stderr text)."""
    p = subprocess.run([str(STORE_TOOL), "--options", options, uri, *args], input=stdin,
                       env=_env(srv, endpoint, **extra), capture_output=True, timeout=120)
    err = p.stderr.decode("utf-8", "replace")
    check_sanitizers(subprocess.CompletedProcess(p.args, p.returncode, p.stdout.decode("utf-8", "replace"), err))
    return p.returncode, p.stdout, err


def one_error_line(err):
    """The message of store-tool's single error line."""
    lines = [l for l in err.splitlines() if l.strip()]
    assert len(lines) == 1, f"want one line, got: {err!r}"
    assert lines[0].startswith("store-tool: error: "), lines[0]
    return lines[0][len("store-tool: error: "):]


def run_contract(srv, bucket, options=OPTIONS):
    """The contract's lines, as (status, text) pairs: "ok", "FAIL" or
    "skip", and the check's name followed, for a failure or a skip, by
    ": " and why."""
    p = subprocess.run([str(CONFORMANCE), "--store", f"s3://{bucket}", "--store-options", options],
                       env=_env(srv), capture_output=True, text=True, timeout=600)
    check_sanitizers(p)
    results = [(m.group(1), m.group(2)) for m in re.finditer(r"(?m)^(ok|FAIL|skip) +(.*)$", p.stdout)]
    return p, results


def content_token_failure(text):
    """Is this failure one of CONTENT_TOKEN_CHECKS, for that reason?"""
    return any(text.startswith(name + ": ") for name in CONTENT_TOKEN_CHECKS) and (
        "same bytes" in text or "stale version" in text)


@pytest.mark.parametrize("versioned,conditional_put", [(True, "etag"), (False, "etag"), (False, "disabled")],
                         ids=["versioned", "unversioned", "no-conditional-put"])
def test_store_contract(s3_server, versioned, conditional_put):
    """With conditional_put = "disabled" the store compares, then writes
    (ordered within the process), and says so: no ATOMIC_CAS."""
    bucket = s3_server.bucket("contract", versioned=versioned)
    options = json.dumps({"allow_http": True, "conditional_put": conditional_put})
    p, results = run_contract(s3_server, bucket, options)
    flags = "VERSION_IDS" if conditional_put == "disabled" else "ATOMIC_CAS VERSION_IDS"
    assert re.search(rf"(?m)^# store contract of s3://{bucket}/contract-\w+: flags {flags}$", p.stdout), p.stdout
    unexpected = [t for status, t in results if status == "FAIL" and not content_token_failure(t)]
    assert not unexpected, f"{s3_server.kind}: {unexpected}\n{p.stdout}\n{p.stderr}"
    passed = [t for status, t in results if status == "ok"]
    assert len(passed) >= 18, p.stdout
    versions = [(status, t) for status, t in results if t.startswith("versions:")]
    assert len(versions) == 3, p.stdout
    for status, t in versions:
        assert status == ("ok" if versioned else "skip"), (t, p.stdout)
    assert any(t.startswith("cleanup") for t in passed), p.stdout
    # The suite deleted everything it wrote.
    assert s3_server.client().list_objects_v2(Bucket=bucket).get("KeyCount", 0) == 0


# ---------------------------------------------------------------------------
# Refusals by the real servers


def test_wrong_secret(s3_server):
    bucket = s3_server.bucket("secret")
    s3_server.client().put_object(Bucket=bucket, Key="k", Body=b"v")
    rc, _, err = tool(s3_server, f"s3://{bucket}", "get", "k", AWS_SECRET_ACCESS_KEY="not-the-secret")
    assert rc == 1
    msg = one_error_line(err)
    assert re.match(rf"s3://{bucket}/k: 403 SignatureDoesNotMatch(: |$)", msg), msg
    assert "not-the-secret" not in err


def test_unknown_access_key(s3_server):
    bucket = s3_server.bucket("keyid")
    # A HEAD answer has no body: the store asks a GET for the server's code.
    for op in ("head", "get"):
        rc, _, err = tool(s3_server, f"s3://{bucket}", op, "k", AWS_ACCESS_KEY_ID="AKIANOSUCHKEY0000000")
        assert rc == 1
        assert re.match(rf"s3://{bucket}/k: 403 (InvalidAccessKeyId|AccessDenied|SignatureDoesNotMatch)",
                        one_error_line(err)), (op, err)


def test_missing_bucket(s3_server):
    missing = "no-such-bucket-" + os.urandom(4).hex()
    want = f"s3://{missing}: 404 NoSuchBucket: bucket '{missing}' does not exist"
    for op in (["get", "k"], ["head", "k"], ["list", ""], ["put", "k"], ["delete", "k"]):
        rc, _, err = tool(s3_server, f"s3://{missing}/prefix", *op, stdin=b"x")
        assert rc == 1, op
        assert one_error_line(err).startswith(want), (op, err)


def test_missing_key_and_plain_http(s3_server):
    bucket = s3_server.bucket("nokey")
    rc, _, err = tool(s3_server, f"s3://{bucket}", "get", "a/b")
    assert rc == 1
    assert one_error_line(err).startswith(f"s3://{bucket}/a/b: 404 NoSuchKey")
    rc, out, _ = tool(s3_server, f"s3://{bucket}", "head", "a/b")
    assert rc == 0 and out == b"absent\n"
    # Plain http:// is refused without allow_http.
    rc, _, err = tool(s3_server, f"s3://{bucket}", "head", "a/b", options="{}")
    assert rc == 2
    assert "allow_http" in one_error_line(err)


def test_bad_session_token(moto_server):
    """moto checks a session token: a malformed one is 400 InvalidToken."""
    bucket = moto_server.bucket("token")
    rc, _, err = tool(moto_server, f"s3://{bucket}", "get", "k", AWS_SESSION_TOKEN="bogus-token")
    assert rc == 1
    msg = one_error_line(err)
    assert re.match(rf"s3://{bucket}/k: (400|403) (InvalidToken|InvalidClientTokenId|ExpiredToken)", msg), msg


def test_forbidden_object(moto_server):
    """A user whose IAM policy denies one key: 403 AccessDenied on it
    (EAUTH, one line naming it), the others readable. moto evaluates IAM
    policies; SeaweedFS's identities grant actions per bucket only."""
    bucket = moto_server.bucket("deny")
    admin = moto_server.client()
    admin.put_object(Bucket=bucket, Key="open", Body=b"yes")
    admin.put_object(Bucket=bucket, Key="secret/x", Body=b"no")
    import boto3
    iam = boto3.client("iam", endpoint_url=moto_server.endpoint, region_name=moto_server.region,
                       aws_access_key_id=moto_server.access_key, aws_secret_access_key=moto_server.secret)
    user = "limited-" + os.urandom(3).hex()
    iam.create_user(UserName=user)
    policy = {"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Action": "s3:*", "Resource": "*"},
        {"Effect": "Deny", "Action": "s3:GetObject", "Resource": f"arn:aws:s3:::{bucket}/secret/*"}]}
    iam.put_user_policy(UserName=user, PolicyName="deny-secret", PolicyDocument=json.dumps(policy))
    key = iam.create_access_key(UserName=user)["AccessKey"]
    creds = dict(AWS_ACCESS_KEY_ID=key["AccessKeyId"], AWS_SECRET_ACCESS_KEY=key["SecretAccessKey"])
    rc, out, _ = tool(moto_server, f"s3://{bucket}", "get", "open", **creds)
    assert rc == 0 and out == b"yes"
    rc, _, err = tool(moto_server, f"s3://{bucket}", "get", "secret/x", **creds)
    assert rc == 1
    assert re.match(rf"s3://{bucket}/secret/x: 403 AccessDenied", one_error_line(err)), err


# ---------------------------------------------------------------------------
# Faults between tether and the server


class FaultProxy:
    """An HTTP/1.1 proxy on 127.0.0.1 in front of a server, which spoils
    chosen answers. plan(n, method, path) for the n-th request (from 1)
    says what to do: None (pass it on), ("cut", N) (relay the answer's head
    and N bytes of its body, then reset the connection), ("status", CODE,
    XML) (answer that instead of asking the server). Requests keep the
    client's Host header, so signatures still hold."""

    def __init__(self, upstream_port, plan):
        self.upstream = ("127.0.0.1", upstream_port)
        self.plan = plan
        self.requests = []
        self.lock = threading.Lock()
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(32)
        self.port = self.sock.getsockname()[1]
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def close(self):
        self.sock.close()

    def _accept(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    @staticmethod
    def _read_request(conn, buf):
        while b"\r\n\r\n" not in buf:
            chunk = conn.recv(65536)
            if not chunk:
                return None, b""
            buf += chunk
        head, rest = buf.split(b"\r\n\r\n", 1)
        m = re.search(rb"(?im)^content-length:\s*(\d+)", head)
        need = int(m.group(1)) if m else 0
        while len(rest) < need:
            chunk = conn.recv(65536)
            if not chunk:
                return None, b""
            rest += chunk
        return head + b"\r\n\r\n" + rest[:need], rest[need:]

    def _forward(self, request):
        """The server's whole answer to request, on a connection of its own
        that the server closes after it."""
        head, body = request.split(b"\r\n\r\n", 1)
        lines = [l for l in head.split(b"\r\n") if not l.lower().startswith(b"connection:")]
        raw = b"\r\n".join(lines + [b"Connection: close"]) + b"\r\n\r\n" + body
        with socket.create_connection(self.upstream, timeout=60) as up:
            up.sendall(raw)
            answer = b""
            while True:
                chunk = up.recv(65536)
                if not chunk:
                    return answer
                answer += chunk

    def _serve(self, conn):
        buf = b""
        try:
            while True:
                request, buf = self._read_request(conn, buf)
                if request is None:
                    return
                method, path = request.split(b" ", 2)[:2]
                with self.lock:
                    self.requests.append((method.decode(), path.decode()))
                    n = len(self.requests)
                action = self.plan(n, method.decode(), path.decode())
                if action and action[0] == "status":
                    body = action[2].encode()
                    conn.sendall(b"HTTP/1.1 %d X\r\nContent-Type: application/xml\r\nContent-Length: %d\r\n\r\n"
                                 % (action[1], len(body)) + body)
                    continue
                answer = self._forward(request)
                # Our own framing: the answer came with Connection: close.
                head, body = answer.split(b"\r\n\r\n", 1)
                if action and action[0] == "cut":
                    conn.sendall(head + b"\r\n\r\n" + body[:action[1]])
                    conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
                    return
                conn.sendall(head + b"\r\n\r\n" + body)
                return  # the server said Connection: close
        except OSError:
            return
        finally:
            conn.close()


@pytest.fixture
def fault_proxy(s3_server):
    proxies = []

    def make(plan):
        p = FaultProxy(s3_server.port, plan)
        proxies.append(p)
        return p
    yield make
    for p in proxies:
        p.close()


def slow_down(times, first=1):
    xml = ("<?xml version=\"1.0\"?><Error><Code>SlowDown</Code>"
           "<Message>Please reduce your request rate.</Message></Error>")
    return lambda n, m, p: ("status", 503, xml) if first <= n < first + times else None


def test_cut_mid_body_is_retried(s3_server, fault_proxy):
    bucket = s3_server.bucket("cut")
    data = os.urandom(200_000)
    s3_server.client().put_object(Bucket=bucket, Key="big", Body=data)
    proxy = fault_proxy(lambda n, m, p: ("cut", 1000) if n <= 2 else None)
    rc, out, err = tool(s3_server, f"s3://{bucket}", "get", "big", endpoint=proxy.endpoint)
    assert rc == 0, err
    assert out == data
    assert len(proxy.requests) == 3


def test_cut_every_time_gives_up(s3_server, fault_proxy):
    bucket = s3_server.bucket("cutall")
    s3_server.client().put_object(Bucket=bucket, Key="k", Body=b"x" * 5000)
    proxy = fault_proxy(lambda n, m, p: ("cut", 100))
    rc, out, err = tool(s3_server, f"s3://{bucket}", "get", "k", endpoint=proxy.endpoint)
    assert rc == 1
    msg = one_error_line(err)
    assert msg.startswith(f"s3://{bucket}/k: GET {proxy.endpoint}/{bucket}/k: "), msg
    assert msg.endswith(f"(gave up after {MAX_ATTEMPTS} attempts)"), msg
    assert len(proxy.requests) == MAX_ATTEMPTS


def test_listing_cut_midway_recovers(s3_server, fault_proxy):
    bucket = s3_server.bucket("midlist")
    keys = [f"d/k{i:02d}" for i in range(7)]
    c = s3_server.client()
    for k in keys:
        c.put_object(Bucket=bucket, Key=k, Body=k.encode())
    # The second page's answer is cut mid-body, once.
    proxy = fault_proxy(lambda n, m, p: ("cut", 60) if n == 2 else None)
    rc, out, err = tool(s3_server, f"s3://{bucket}", "list", "d", "2", endpoint=proxy.endpoint)
    assert rc == 0, err
    assert [l.split(" ")[0] for l in out.decode().splitlines()] == keys
    assert len(proxy.requests) == 5  # 4 pages + the retried one
    assert all("list-type=2" in p for _, p in proxy.requests)


def test_listing_server_stops_gives_up(s3_server, fault_proxy):
    bucket = s3_server.bucket("stoplist")
    c = s3_server.client()
    for i in range(5):
        c.put_object(Bucket=bucket, Key=f"k{i}", Body=b"v")
    # The first page arrives; from the second on, the server cuts out.
    proxy = fault_proxy(lambda n, m, p: ("cut", 30) if n >= 2 else None)
    rc, out, err = tool(s3_server, f"s3://{bucket}/", "list", "", "2", endpoint=proxy.endpoint)
    assert rc == 1
    msg = one_error_line(err)
    assert msg.startswith(f"s3://{bucket}: GET {proxy.endpoint}/{bucket}: "), msg
    assert msg.endswith(f"(gave up after {MAX_ATTEMPTS} attempts)"), msg
    assert len(proxy.requests) == 1 + MAX_ATTEMPTS


def test_throttled_recovers(s3_server, fault_proxy):
    bucket = s3_server.bucket("throttle")
    s3_server.client().put_object(Bucket=bucket, Key="k", Body=b"value")
    proxy = fault_proxy(slow_down(MAX_ATTEMPTS - 1))
    rc, out, err = tool(s3_server, f"s3://{bucket}", "get", "k", endpoint=proxy.endpoint)
    assert rc == 0, err
    assert out == b"value"
    assert len(proxy.requests) == MAX_ATTEMPTS


def test_throttled_gives_up(s3_server, fault_proxy):
    bucket = s3_server.bucket("throttled")
    proxy = fault_proxy(slow_down(1000))
    rc, _, err = tool(s3_server, f"s3://{bucket}", "put", "k", stdin=b"v", endpoint=proxy.endpoint)
    assert rc == 1
    assert one_error_line(err) == (f"s3://{bucket}/k: 503 SlowDown: Please reduce your request rate. "
                                   f"(gave up after {MAX_ATTEMPTS} attempts)")
    assert len(proxy.requests) == MAX_ATTEMPTS
    # Nothing was written.
    assert s3_server.client().list_objects_v2(Bucket=bucket).get("KeyCount", 0) == 0


def test_expired_token_not_retried(s3_server, fault_proxy):
    bucket = s3_server.bucket("expired")
    xml = ("<?xml version=\"1.0\"?><Error><Code>ExpiredToken</Code>"
           "<Message>The provided token has expired.</Message></Error>")
    proxy = fault_proxy(lambda n, m, p: ("status", 400, xml))
    rc, _, err = tool(s3_server, f"s3://{bucket}", "get", "k", endpoint=proxy.endpoint)
    assert rc == 1
    assert one_error_line(err) == f"s3://{bucket}/k: 400 ExpiredToken: The provided token has expired."
    assert len(proxy.requests) == 1  # a 4xx is never retried


def test_unreachable_endpoint(moto_server):
    """Nothing listens: connection refused is transient, retried, then one
    line naming the URI and the address."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{s.getsockname()[1]}"
    rc, _, err = tool(moto_server, "s3://bucket/p", "head", "k", endpoint=closed)
    assert rc == 1
    msg = one_error_line(err)
    assert msg.startswith(f"s3://bucket/p/k: HEAD {closed}/bucket/p/k: "), msg
    assert msg.endswith(f"(gave up after {MAX_ATTEMPTS} attempts)"), msg
