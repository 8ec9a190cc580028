"""Fakes of the Google services the GCS store's credentials need, for what
cannot run here: one HTTP server on 127.0.0.1 (a thread of the test
process, stopped by the test) playing

  /token              Google's OAuth 2.0 token endpoint: the jwt-bearer
                      grant (the assertion's RS256 signature verified with
                      the service account's public key by the
                      `cryptography` package, its claims checked) and the
                      refresh_token grant of an authorized user;
  /computeMetadata/v1/instance/service-accounts/default/token
                      the GCE metadata server (Metadata-Flavor: Google
                      required, as the real one does);
  /storage/, /upload/ Cloud Storage's JSON API in front of fake-gcs-server
                      (which checks no credentials): the bearer token must
                      be one this fake issued and not expired, else 401;
                      a principal marked forbidden gets 403; anything else
                      is forwarded, unless the test queued statuses to
                      answer instead (fail_storage: 503, 429, 400, ...).

It records what it was asked (token grants, the Authorization of every
storage request, the answers it gave), for the tests to judge.
"""
import base64
import http.client
import json
import secrets
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

SCOPE = "https://www.googleapis.com/auth/devstorage.read_write"
# What is relayed from fake-gcs-server's answers.
RELAYED = ("content-type", "content-range", "x-goog-generation", "x-goog-stored-content-length",
           "x-goog-hash", "etag")


def b64url_decode(s):
    return base64.urlsafe_b64decode(s + "=" * (-len(s) % 4))


def new_key():
    """A fresh 2048-bit RSA key (never a committed one)."""
    from cryptography.hazmat.primitives.asymmetric import rsa
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def pem_of(key):
    from cryptography.hazmat.primitives import serialization
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption()).decode()


class GoogleFakes:
    def __init__(self, upstream):
        self.upstream = upstream            # "127.0.0.1:PORT" of fake-gcs-server
        self.lock = threading.Lock()
        self.accounts = {}                  # client_email -> public key
        self.users = {}                     # refresh_token -> (client_id, client_secret)
        self.forbidden = set()              # principals answered 403
        self.expires_in = 3600
        self.tokens = {}                    # token -> (principal, expires at, monotonic)
        self.grants = []                    # (grant type, principal) of every token issued
        self.refusals = []                  # why a token request was refused
        self.storage = []                   # (method, path, Authorization or None, status answered)
        self.metadata_principal = "vm-default@tether-tests.iam.gserviceaccount.com"
        self.allow_anonymous = False
        self.lose_upload_answers = 0        # uploads to forward and then answer 503
        self.fail_storage = []              # statuses to answer the next storage requests with
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def port(self):
        return self.server.server_address[1]

    @property
    def endpoint(self):
        return f"http://127.0.0.1:{self.port}"

    @property
    def token_uri(self):
        return f"{self.endpoint}/token"

    @property
    def metadata_host(self):
        return f"127.0.0.1:{self.port}"

    def stop(self):
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(10)

    # -- what a test sets up --------------------------------------------
    def service_account(self, email="tether-test@tether-tests.iam.gserviceaccount.com", registered=True,
                        token_uri=None):
        """A service-account key (dict, as Google's JSON key file holds it)
        for email, its public key registered here unless not registered."""
        key = new_key()
        if registered:
            self.accounts[email] = key.public_key()
        return {"type": "service_account", "project_id": "tether-tests", "private_key_id": secrets.token_hex(20),
                "private_key": pem_of(key), "client_email": email, "client_id": "1234567890",
                "token_uri": token_uri or self.token_uri}

    def authorized_user(self, refresh_token=None):
        rt = refresh_token or secrets.token_urlsafe(24)
        cid, csecret = "client-" + secrets.token_hex(4), secrets.token_urlsafe(12)
        self.users[rt] = (cid, csecret)
        return {"type": "authorized_user", "client_id": cid, "client_secret": csecret, "refresh_token": rt,
                "token_uri": self.token_uri}

    def revoke_all(self):
        with self.lock:
            self.tokens.clear()

    def token_count(self):
        with self.lock:
            return len(self.grants)

    # -- the server ------------------------------------------------------
    def _issue(self, grant, principal):
        token = "ya29.fake-" + secrets.token_urlsafe(24)
        with self.lock:
            self.tokens[token] = (principal, time.monotonic() + self.expires_in)
            self.grants.append((grant, principal))
        return {"access_token": token, "expires_in": self.expires_in, "token_type": "Bearer"}

    def _check_assertion(self, assertion):
        """The principal of a valid jwt-bearer assertion, or why it is not."""
        from cryptography.exceptions import InvalidSignature
        from cryptography.hazmat.primitives import hashes
        from cryptography.hazmat.primitives.asymmetric import padding
        try:
            h64, c64, s64 = assertion.split(".")
            header, claims = json.loads(b64url_decode(h64)), json.loads(b64url_decode(c64))
            signature = b64url_decode(s64)
        except ValueError as e:
            return None, f"malformed assertion: {e}"
        if header.get("alg") != "RS256" or header.get("typ") != "JWT":
            return None, f"header {header}"
        public = self.accounts.get(claims.get("iss"))
        if public is None:
            return None, f"unknown issuer {claims.get('iss')}"
        try:
            public.verify(signature, f"{h64}.{c64}".encode(), padding.PKCS1v15(), hashes.SHA256())
        except InvalidSignature:
            return None, "Invalid JWT Signature."
        now = time.time()
        if claims.get("aud") != self.token_uri or claims.get("scope") != SCOPE:
            return None, f"aud/scope {claims.get('aud')} {claims.get('scope')}"
        if not (abs(claims["iat"] - now) < 300 and claims["exp"] - claims["iat"] == 3600):
            return None, f"iat/exp {claims['iat']} {claims['exp']}"
        return claims["iss"], None

    def _handler(self):
        fakes = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def _answer(self, status, body=b"", headers=()):
                if isinstance(body, (dict, list)):
                    body = json.dumps(body).encode()
                    headers = list(headers) + [("Content-Type", "application/json")]
                self.send_response(status)
                for k, v in headers:
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(body)

            def _body(self):
                n = int(self.headers.get("Content-Length") or 0)
                return self.rfile.read(n) if n else b""

            def _token(self):
                form = urllib.parse.parse_qs(self._body().decode())
                grant = form.get("grant_type", [""])[0]
                if grant == "urn:ietf:params:oauth:grant-type:jwt-bearer":
                    principal, why = fakes._check_assertion(form.get("assertion", [""])[0])
                elif grant == "refresh_token":
                    rt = form.get("refresh_token", [""])[0]
                    want = fakes.users.get(rt)
                    got = (form.get("client_id", [""])[0], form.get("client_secret", [""])[0])
                    principal, why = (f"user:{rt[:6]}", None) if want and want == got else (None, "Bad refresh")
                else:
                    principal, why = None, f"grant_type {grant!r}"
                if why:
                    fakes.refusals.append(why)
                    return self._answer(400, {"error": "invalid_grant", "error_description": why})
                self._answer(200, fakes._issue(grant, principal))

            def _metadata(self):
                if self.headers.get("Metadata-Flavor") != "Google":
                    return self._answer(403, b"Missing Metadata-Flavor:Google header.")
                self._answer(200, fakes._issue("metadata", fakes.metadata_principal),
                             [("Metadata-Flavor", "Google")])

            def _storage(self):
                auth = self.headers.get("Authorization")
                body = self._body()
                principal = None
                if auth and auth.startswith("Bearer "):
                    with fakes.lock:
                        entry = fakes.tokens.get(auth[len("Bearer "):])
                    if entry and entry[1] > time.monotonic():
                        principal = entry[0]
                status = None
                with fakes.lock:
                    injected = fakes.fail_storage.pop(0) if fakes.fail_storage else None
                if injected:
                    status = injected
                    self._answer(injected, {"error": {"code": injected, "message": "injected by the test",
                                                      "errors": [{"reason": "injected"}]}})
                elif principal is None and not (auth is None and fakes.allow_anonymous):
                    status = 401
                    self._answer(401, {"error": {"code": 401, "message": "Invalid Credentials",
                                                 "errors": [{"reason": "authError", "message": "Invalid Credentials"}]}})
                elif principal in fakes.forbidden:
                    status = 403
                    msg = f"{principal} does not have storage.objects access to the Google Cloud Storage object."
                    self._answer(403, {"error": {"code": 403, "message": msg,
                                                 "errors": [{"reason": "forbidden", "message": msg}]}})
                else:
                    status = self._forward(body)
                with fakes.lock:
                    fakes.storage.append((self.command, self.path, auth, status))

            def _forward(self, body):
                conn = http.client.HTTPConnection(fakes.upstream, timeout=30)
                headers = {k: v for k, v in self.headers.items() if k.lower() in ("range", "content-type")}
                conn.request(self.command, self.path, body=body or None, headers=headers)
                r = conn.getresponse()
                data = r.read()
                relayed = [(k, v) for k, v in r.getheaders() if k.lower() in RELAYED]
                conn.close()
                if self.path.startswith("/upload/") and fakes.lose_upload_answers:
                    # The write happened; its answer is lost.
                    fakes.lose_upload_answers -= 1
                    self._answer(503, {"error": {"code": 503, "message": "Backend Error"}})
                    return 503
                self._answer(r.status, data, relayed)
                return r.status

            def do_GET(self):
                if self.path.startswith("/computeMetadata/v1/instance/service-accounts/default/token"):
                    return self._metadata()
                if self.path.startswith(("/storage/", "/upload/")):
                    return self._storage()
                self._answer(404, b"not here")

            def do_POST(self):
                if self.path == "/token":
                    return self._token()
                if self.path.startswith(("/storage/", "/upload/")):
                    return self._storage()
                self._answer(404, b"not here")

            do_DELETE = do_GET
            do_HEAD = do_GET

        return Handler
