"""Fakes of the AWS credential services tether's credential chain asks
(src/store/s3/creds.h), for what cannot run here: the EC2 instance metadata
service (IMDSv2), the ECS container credentials endpoint, and STS
(AssumeRoleWithWebIdentity, AssumeRole).

Each is an http.server on 127.0.0.1, an ephemeral port, in a thread; a test
starts it (`with FakeImds() as imds:`) and it stops when the block ends.
Each checks what the real service checks, and refuses the way it does:

  FakeImds  PUT /latest/api/token needs X-aws-ec2-metadata-token-ttl-seconds
            (1..21600) and no X-Forwarded-For; every GET needs a token it
            issued, still valid, in X-aws-ec2-metadata-token (else 401);
            /latest/meta-data/iam/security-credentials/ lists the role,
            .../ROLE answers its credentials as JSON.
  FakeEcs   GET of its one path; with `auth` set, the Authorization header
            must be exactly that (else 401); the credentials as JSON.
  FakeSts   POST of a form, Version=2011-06-15. AssumeRoleWithWebIdentity:
            RoleArn and WebIdentityToken must be the ones it was given, a
            RoleSessionName of 2-64 of [\\w+=,.@-]; unsigned. AssumeRole:
            a SigV4 signature (service sts, its region) computed with a key
            pair it was given and checked byte for byte, the session token
            of that key pair in X-Amz-Security-Token when it has one, the
            RoleArn, and the ExternalId when one is required. Errors as STS
            writes them (<ErrorResponse><Error><Code>).

Every fake issues fresh credentials at each request (key ids ASIA<PREFIX>0001,
0002, ...; or always the key pair `fixed`, for a real S3 server to accept)
expiring `ttl` seconds later, logs each request it served in
`requests` (method, path, status), and can be told to answer the first
requests with an error status (`fail_first=[500]`), to hang without
answering (`hang=True`), or to answer anything (`answer`), to test retries,
timeouts and hostile answers. Tested against
nothing but these fakes: the real services' answers are AWS's documented
formats, which these reproduce.
"""
import calendar
import hashlib
import hmac
import json
import re
import secrets
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from xml.sax.saxutils import escape

STS_NS = "https://sts.amazonaws.com/doc/2011-06-15/"


def iso8601(t):
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def _serve(self):
        fake = self.server.fake
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        with fake.lock:
            hang = fake.hang
            forced = fake.fail_first.pop(0) if fake.fail_first else None
        if hang:
            # Answer nothing until the test ends (or the client gives up).
            fake.stopping.wait(60)
            self.close_connection = True
            return
        if forced is not None:
            status, ctype, payload = forced, "text/plain", b"injected failure"
        elif fake.answer is not None:
            status, ctype, payload = fake.answer
        else:
            status, ctype, payload = fake.handle(self.command, self.path, self.headers, body)
        with fake.lock:
            fake.requests.append((self.command, self.path, status))
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(payload)

    do_GET = do_PUT = do_POST = do_HEAD = _serve


class Fake:
    """The common part: a server thread, the issued keys, the request log."""

    prefix = "FAKE"

    def __init__(self, ttl=3600, fail_first=(), hang=False, fixed=None):
        self.ttl = ttl
        self.fixed = fixed  # (key id, secret): issue these, with no session token, every time
        self.answer = None  # (status, content type, bytes): answer this, whatever was asked
        self.fail_first = list(fail_first)
        self.hang = hang
        self.lock = threading.Lock()
        self.requests = []
        self.issued = []  # (key id, secret, token), in order
        self.stopping = threading.Event()
        self.server = None

    def start(self):
        self.server = _Server(("127.0.0.1", 0), _Handler)
        self.server.fake = self
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        return self

    def stop(self):
        self.stopping.set()
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(10)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    @property
    def url(self):
        return "http://127.0.0.1:%d" % self.server.server_address[1]

    def issue(self):
        """Fresh credentials: (key id, secret, token, expiration)."""
        with self.lock:
            n = len(self.issued) + 1
            key = "ASIA%s%04d" % (self.prefix, n)
            cred = (key, secrets.token_hex(20), "token-%s-%d" % (self.prefix.lower(), n))
            if self.fixed:
                cred = (self.fixed[0], self.fixed[1], None)
            self.issued.append(cred)
        return cred + (iso8601(time.time() + self.ttl),)

    def served(self, status=None):
        """The requests answered (with that status, when given)."""
        with self.lock:
            return [r for r in self.requests if status is None or r[2] == status]

    def handle(self, method, path, headers, body):
        raise NotImplementedError


def _json(status, obj):
    return status, "application/json", json.dumps(obj).encode()


class FakeImds(Fake):
    prefix = "IMDS"
    role = "tether-test-role"

    def __init__(self, **kw):
        super().__init__(**kw)
        self.tokens = {}  # token -> expiry

    def handle(self, method, path, headers, body):
        if method == "PUT" and path == "/latest/api/token":
            if headers.get("X-Forwarded-For"):
                return 403, "text/plain", b"Forbidden"
            ttl = headers.get("X-aws-ec2-metadata-token-ttl-seconds")
            if not ttl or not ttl.isdigit() or not 1 <= int(ttl) <= 21600:
                return 400, "text/plain", b"Bad Request"
            token = secrets.token_urlsafe(32)
            with self.lock:
                self.tokens[token] = time.time() + int(ttl)
            return 200, "text/plain", token.encode()
        if method != "GET":
            return 405, "text/plain", b"Method Not Allowed"
        token = headers.get("X-aws-ec2-metadata-token")
        with self.lock:
            valid = token in self.tokens and self.tokens[token] > time.time()
        if not valid:
            return 401, "text/plain", b"Unauthorized"
        base = "/latest/meta-data/iam/security-credentials/"
        if path == base:
            return 200, "text/plain", self.role.encode()
        if path == base + self.role:
            key, secret, tok, exp = self.issue()
            return _json(200, {"Code": "Success", "LastUpdated": iso8601(time.time()), "Type": "AWS-HMAC",
                               "AccessKeyId": key, "SecretAccessKey": secret, "Token": tok, "Expiration": exp})
        return 404, "text/plain", b"Not Found"


class FakeEcs(Fake):
    prefix = "ECS"
    path = "/v2/credentials/6d5a1d1e-tether"

    def __init__(self, auth=None, **kw):
        super().__init__(**kw)
        self.auth = auth

    @property
    def credentials_url(self):
        return self.url + self.path

    def handle(self, method, path, headers, body):
        if method != "GET" or path != self.path:
            return _json(404, {"code": "NotFound", "message": "no such credentials"})
        if self.auth is not None and headers.get("Authorization") != self.auth:
            return _json(401, {"code": "AccessDeniedException", "message": "Authorization header is missing or wrong"})
        key, secret, tok, exp = self.issue()
        answer = {"AccessKeyId": key, "SecretAccessKey": secret, "Token": tok, "Expiration": exp,
                  "RoleArn": "arn:aws:iam::123456789012:role/ecs-task"}
        if tok is None:
            del answer["Token"]
        return _json(200, answer)


class FakeSts(Fake):
    prefix = "STS"

    def __init__(self, role_arn, region="us-east-1", web_identity_token=None, signers=(), external_id=None, **kw):
        super().__init__(**kw)
        self.role_arn = role_arn
        self.region = region
        self.web_identity_token = web_identity_token
        # (key id, secret, session token or None) allowed to sign AssumeRole
        self.signers = list(signers)
        self.external_id = external_id
        self.seen = []  # the forms received, for the tests to inspect

    def allow(self, key_id, secret, token=None):
        with self.lock:
            self.signers.append((key_id, secret, token))

    @staticmethod
    def _error(status, code, message):
        xml = ("<ErrorResponse xmlns=\"%s\"><Error><Type>Sender</Type><Code>%s</Code><Message>%s</Message>"
               "</Error><RequestId>%s</RequestId></ErrorResponse>" % (STS_NS, code, escape(message),
                                                                       secrets.token_hex(8)))
        return status, "text/xml", xml.encode()

    def _answer(self, action):
        key, secret, tok, exp = self.issue()
        xml = ("<{a}Response xmlns=\"{ns}\"><{a}Result><Credentials><AccessKeyId>{k}</AccessKeyId>"
               "<SecretAccessKey>{s}</SecretAccessKey><SessionToken>{t}</SessionToken>"
               "<Expiration>{e}</Expiration></Credentials><AssumedRoleUser><AssumedRoleId>AROA:x</AssumedRoleId>"
               "<Arn>{r}/x</Arn></AssumedRoleUser></{a}Result><ResponseMetadata><RequestId>{rid}</RequestId>"
               "</ResponseMetadata></{a}Response>").format(a=action, ns=STS_NS, k=key, s=secret, t=tok, e=exp,
                                                            r=escape(self.role_arn), rid=secrets.token_hex(8))
        return 200, "text/xml", xml.encode()

    def handle(self, method, path, headers, body):
        if method != "POST":
            return self._error(400, "InvalidAction", "STS answers POST")
        if not (headers.get("Content-Type") or "").startswith("application/x-www-form-urlencoded"):
            return self._error(400, "InvalidParameterValue", "the body must be a form")
        form = dict(urllib.parse.parse_qsl(body.decode(), keep_blank_values=True))
        with self.lock:
            self.seen.append(form)
        if form.get("Version") != "2011-06-15":
            return self._error(400, "InvalidAction", "Could not find operation for version %s" % form.get("Version"))
        if not re.fullmatch(r"[\w+=,.@-]{2,64}", form.get("RoleSessionName", "")):
            return self._error(400, "ValidationError", "RoleSessionName is missing or malformed")
        action = form.get("Action")
        if action == "AssumeRoleWithWebIdentity":
            if form.get("WebIdentityToken") != self.web_identity_token:
                return self._error(400, "InvalidIdentityToken", "The web identity token is not valid")
            if form.get("RoleArn") != self.role_arn:
                return self._error(403, "AccessDenied", "Not authorized to perform sts:AssumeRoleWithWebIdentity")
            return self._answer(action)
        if action == "AssumeRole":
            why = self._check_signature(method, path, headers, body)
            if why:
                return self._error(403, why[0], why[1])
            if form.get("RoleArn") != self.role_arn:
                return self._error(403, "AccessDenied", "Not authorized to perform sts:AssumeRole")
            if self.external_id is not None and form.get("ExternalId") != self.external_id:
                return self._error(403, "AccessDenied", "ExternalId is missing or wrong")
            return self._answer(action)
        return self._error(400, "InvalidAction", "Could not find operation %s" % action)

    def _check_signature(self, method, path, headers, body):
        """SigV4 as STS checks it: (code, message) when it is wrong."""
        auth = headers.get("Authorization") or ""
        m = re.fullmatch(r"AWS4-HMAC-SHA256 Credential=([^/]+)/(\d{8})/([^/]+)/([^/]+)/aws4_request, "
                         r"SignedHeaders=([a-z0-9;-]+), Signature=([0-9a-f]{64})", auth)
        if not m:
            return ("MissingAuthenticationToken", "Request is missing Authentication Token")
        key_id, day, region, service, signed, signature = m.groups()
        with self.lock:
            signer = next((s for s in self.signers if s[0] == key_id), None)
        if not signer:
            return ("InvalidClientTokenId", "The security token included in the request is invalid.")
        if service != "sts" or region != self.region:
            return ("SignatureDoesNotMatch", "Credential should be scoped to %s/sts" % self.region)
        if signer[2] is not None and headers.get("X-Amz-Security-Token") != signer[2]:
            return ("InvalidClientTokenId", "The security token included in the request is invalid.")
        amz_date = headers.get("X-Amz-Date") or ""
        try:
            when = calendar.timegm(time.strptime(amz_date, "%Y%m%dT%H%M%SZ"))
        except ValueError:
            return ("IncompleteSignature", "X-Amz-Date is missing or malformed")
        if abs(when - time.time()) > 900 or not amz_date.startswith(day):
            return ("SignatureDoesNotMatch", "Signature expired or dated wrong")
        names = signed.split(";")
        if "host" not in names:
            return ("SignatureDoesNotMatch", "host must be signed")
        payload = hashlib.sha256(body).hexdigest()
        declared = headers.get("x-amz-content-sha256")
        if declared is not None and declared != payload:
            return ("SignatureDoesNotMatch", "x-amz-content-sha256 does not match the body")
        canonical_headers = "".join("%s:%s\n" % (n, " ".join((headers.get(n) or "").split())) for n in names)
        uri, _, query = path.partition("?")
        canonical_query = "&".join(sorted(query.split("&"))) if query else ""
        canonical = "\n".join([method, uri or "/", canonical_query, canonical_headers, signed, payload])
        scope = "%s/%s/%s/aws4_request" % (day, region, service)
        to_sign = "\n".join(["AWS4-HMAC-SHA256", amz_date, scope, hashlib.sha256(canonical.encode()).hexdigest()])
        k = ("AWS4" + signer[1]).encode()
        for part in (day, region, service, "aws4_request"):
            k = hmac.new(k, part.encode(), hashlib.sha256).digest()
        if not hmac.compare_digest(hmac.new(k, to_sign.encode(), hashlib.sha256).hexdigest(), signature):
            return ("SignatureDoesNotMatch", "The request signature we calculated does not match the signature "
                    "you provided.")
        return None
