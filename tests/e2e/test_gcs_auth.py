"""The GCS store's credentials, against the fakes of gcsauth.py in front of
fake-gcs-server (which checks none itself): a service-account key (the
fake token endpoint verifies the JWT's RS256 signature with the public
key), an authorized user's refresh token, the GCE metadata server; tokens
cached, refreshed when less than five minutes remain, renewed once after
a 401; a 403, a wrong key, no credentials at all and bad key files, each
a one-line error naming the gs:// URI or the key file."""
import json
import threading
import time

import pytest

from gcsauth import GoogleFakes, new_key
from s3servers import free_ports
from storetool import drive, hexof, one

EAUTH, ENOTFOUND, EUSAGE, ECONFIG = -9, -5, -2, -6


@pytest.fixture
def fakes(gcs_server):
    f = GoogleFakes(gcs_server.host)
    yield f
    f.stop()


@pytest.fixture
def setting(gcs_server, fakes, tmp_path):
    """(bucket, env, options) for a store that must authenticate: requests
    go to the fakes (endpoint_url), no emulator, a HOME of the test's (no
    gcloud file), and a metadata server on a port nothing listens on."""
    b = gcs_server.bucket("auth")
    env = gcs_server.env()
    env.pop("STORAGE_EMULATOR_HOST")
    env["HOME"] = str(tmp_path / "home")
    (closed,) = free_ports(1)
    env["GCE_METADATA_HOST"] = f"127.0.0.1:{closed}"
    return b, env, {"endpoint_url": fakes.endpoint, "allow_http": True}


def write_key(tmp_path, key, name="key.json"):
    path = tmp_path / name
    path.write_text(json.dumps(key))
    return str(path)


def test_service_account_key_from_google_application_credentials(fakes, setting, tmp_path, gcs_server):
    b, env, opts = setting
    env["GOOGLE_APPLICATION_CREDENTIALS"] = write_key(tmp_path, fakes.service_account())
    answers = drive(f"gs://{b}/sa", [{"op": "put", "key": "k", "data": hexof("secret data"), "mode": "if-absent"},
                                     {"op": "get", "key": "k"}, {"op": "stat", "key": "k"},
                                     {"op": "list", "page_size": 1}], env, opts)
    assert all(a["ok"] for a in answers), answers
    assert answers[1]["data"] == hexof("secret data")
    # One token for the whole command, from a verified assertion.
    assert fakes.grants == [("urn:ietf:params:oauth:grant-type:jwt-bearer",
                             "tether-test@tether-tests.iam.gserviceaccount.com")]
    assert fakes.refusals == []
    assert fakes.storage and all(auth and auth.startswith("Bearer ya29.fake-") and status in (200, 404)
                                 for _, _, auth, status in fakes.storage)
    assert gcs_server.api("GET", f"/storage/v1/b/{b}/o/sa%2Fk?alt=media", raw=True) == (200, b"secret data")


def test_service_account_key_in_the_options(fakes, setting, tmp_path):
    b, env, opts = setting
    key = fakes.service_account()
    a = one(f"gs://{b}", {"op": "put", "key": "k", "data": "00"}, env,
            dict(opts, service_account_key=json.dumps(key)))
    assert a["ok"], a
    a = one(f"gs://{b}", {"op": "stat", "key": "k"}, env,
            dict(opts, service_account_path=write_key(tmp_path, key)))
    assert a["ok"] and a["exists"], a
    both = one(f"gs://{b}", {"op": "stat", "key": "k"}, env,
               dict(opts, service_account_key=json.dumps(key), service_account_path=write_key(tmp_path, key)))
    assert both["code"] == EUSAGE and "give one" in both["error"]


def test_token_refreshed_when_less_than_five_minutes_remain(fakes, setting, tmp_path):
    b, env, opts = setting
    env["GOOGLE_APPLICATION_CREDENTIALS"] = write_key(tmp_path, fakes.service_account())
    # 303 s: good for about three seconds before the five-minute margin.
    fakes.expires_in = 303
    answers = drive(f"gs://{b}", [{"op": "stat", "key": "k"}, {"op": "stat", "key": "k"},
                                  {"op": "sleep", "seconds": 4.5}, {"op": "stat", "key": "k"}], env, opts)
    assert all(a["ok"] for a in answers), answers
    assert fakes.token_count() == 2
    tokens = [auth for _, path, auth, _ in fakes.storage if "/o/k" in path]
    assert tokens[0] == tokens[1] != tokens[2]
    # An hour's token is kept across the same pause.
    fakes.expires_in = 3600
    before = fakes.token_count()
    drive(f"gs://{b}", [{"op": "stat", "key": "k"}, {"op": "sleep", "seconds": 4.5}, {"op": "stat", "key": "k"}],
          env, opts)
    assert fakes.token_count() == before + 1


def test_a_refused_token_is_renewed_once(fakes, setting, tmp_path):
    b, env, opts = setting
    env["GOOGLE_APPLICATION_CREDENTIALS"] = write_key(tmp_path, fakes.service_account())
    timer = threading.Timer(1.0, fakes.revoke_all)
    timer.start()
    answers = drive(f"gs://{b}", [{"op": "stat", "key": "k"}, {"op": "sleep", "seconds": 2.5},
                                  {"op": "stat", "key": "k"}], env, opts)
    timer.join()
    assert all(a["ok"] for a in answers), answers
    assert fakes.token_count() == 2
    assert [s for *_, s in fakes.storage if s == 401] == [401]


def test_a_403_is_an_auth_error_naming_the_uri_and_credentials(fakes, setting, tmp_path):
    b, env, opts = setting
    email = "no-access@tether-tests.iam.gserviceaccount.com"
    path = write_key(tmp_path, fakes.service_account(email))
    env["GOOGLE_APPLICATION_CREDENTIALS"] = path
    fakes.forbidden.add(email)
    a = one(f"gs://{b}/p", {"op": "get", "key": "k"}, env, opts)
    assert a["code"] == EAUTH and a["exit"] == 1
    assert a["error"].startswith(f"gs://{b}/p/k: HTTP 403 forbidden: {email} does not have")
    assert f"(credentials: service account {email} (GOOGLE_APPLICATION_CREDENTIALS file {path}))" in a["error"]


def test_a_key_the_token_endpoint_refuses(fakes, setting, tmp_path):
    b, env, opts = setting
    path = write_key(tmp_path, fakes.service_account(registered=False))
    env["GOOGLE_APPLICATION_CREDENTIALS"] = path
    # Registered under the same email with another key: the signature fails.
    fakes.accounts["tether-test@tether-tests.iam.gserviceaccount.com"] = new_key().public_key()
    a = one(f"gs://{b}", {"op": "put", "key": "k", "data": "00"}, env, opts)
    assert a["code"] == EAUTH
    assert a["error"].startswith(f"gs://{b}/k: the GCS token endpoint {fakes.token_uri} "
                                 f"(GOOGLE_APPLICATION_CREDENTIALS file {path}): HTTP 400 invalid_grant: "
                                 "Invalid JWT Signature.")
    assert fakes.refusals == ["Invalid JWT Signature."]
    assert not fakes.storage  # nothing was sent unauthenticated


def test_authorized_user_and_gcloud_file(fakes, setting, tmp_path):
    b, env, opts = setting
    user = fakes.authorized_user()
    gcloud = tmp_path / "home" / ".config" / "gcloud"
    gcloud.mkdir(parents=True)
    (gcloud / "application_default_credentials.json").write_text(json.dumps(user))
    a = one(f"gs://{b}", {"op": "put", "key": "k", "data": "00"}, env, opts)
    assert a["ok"], a
    assert [g for g, _ in fakes.grants] == ["refresh_token"]
    # A refresh token the endpoint does not know.
    user["refresh_token"] = "revoked"
    a = one(f"gs://{b}", {"op": "stat", "key": "k"}, env, dict(opts, service_account_key=json.dumps(user)))
    assert a["code"] == EAUTH and "HTTP 400 invalid_grant: Bad refresh" in a["error"]
    assert "revoked" not in a["error"]


def test_metadata_server(fakes, setting):
    b, env, opts = setting
    env["GCE_METADATA_HOST"] = fakes.metadata_host
    a = drive(f"gs://{b}", [{"op": "put", "key": "k", "data": "00"}, {"op": "stat", "key": "k"}], env, opts)
    assert all(x["ok"] for x in a), a
    assert fakes.grants == [("metadata", fakes.metadata_principal)]


def test_no_credentials_anywhere(setting):
    b, env, opts = setting
    t0 = time.monotonic()
    a = one(f"gs://{b}", {"op": "stat", "key": "k"}, env, opts)
    assert time.monotonic() - t0 < 15
    assert a["code"] == EAUTH
    assert a["error"].startswith(f"gs://{b}/k: no GCS credentials: no service_account_key or "
                                 "service_account_path store option, GOOGLE_APPLICATION_CREDENTIALS unset")
    assert f"the GCE metadata server at {env['GCE_METADATA_HOST']}: unreachable" in a["error"]
    env["NO_GCE_CHECK"] = "true"
    a = one(f"gs://{b}", {"op": "stat", "key": "k"}, env, opts)
    assert a["code"] == EAUTH and "NO_GCE_CHECK turns the metadata server off" in a["error"]


def test_the_emulator_gets_no_credentials(fakes, gcs_server, tmp_path):
    b = gcs_server.bucket("anon")
    env = gcs_server.env()
    env["STORAGE_EMULATOR_HOST"] = fakes.metadata_host
    # Ignored under an emulator, as Google's clients ignore it.
    env["GOOGLE_APPLICATION_CREDENTIALS"] = str(tmp_path / "nonexistent.json")
    fakes.allow_anonymous = True
    a = drive(f"gs://{b}", [{"op": "put", "key": "k", "data": "00"}, {"op": "get", "key": "k"}], env)
    assert all(x["ok"] for x in a), a
    assert fakes.storage and all(auth is None for _, _, auth, _ in fakes.storage)
    assert fakes.grants == []


def test_a_lost_answer_to_a_conditional_write(fakes, setting, tmp_path, gcs_server):
    """The upload landed but its answer was a 503: the retry's 412 is
    checked against what the object holds (our bytes: success)."""
    b, env, opts = setting
    env["GOOGLE_APPLICATION_CREDENTIALS"] = write_key(tmp_path, fakes.service_account())
    fakes.lose_upload_answers = 1
    a = one(f"gs://{b}", {"op": "put", "key": "ref", "data": hexof("mine"), "mode": "if-absent"}, env, opts)
    assert a["ok"], a
    status, server = gcs_server.api("GET", f"/storage/v1/b/{b}/o/ref")
    assert a["version"] == server["generation"]
    uploads = [s for m, p, _, s in fakes.storage if p.startswith("/upload/")]
    assert uploads == [503, 412]
    # Someone else's bytes there: refused.
    fakes.lose_upload_answers = 0
    a = one(f"gs://{b}", {"op": "put", "key": "ref", "data": hexof("theirs"), "mode": "if-absent"}, env, opts)
    assert a["code"] == -3


PEM_LINE = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC"


@pytest.mark.parametrize("content, code, why", [
    ("{not json", ECONFIG, "bad.json:1:4: not a JSON key file"),
    ('{"type": "service_account"}', EAUTH, '"client_email" is missing'),
    ('{"type": "external_account"}', EAUTH, '"type" is "external_account"; tether reads'),
    ('{"type": "service_account", "client_email": "a@b", "token_uri": "https://oauth2.googleapis.com/token", '
     '"private_key": "-----BEGIN PRIVATE KEY-----\\n' + PEM_LINE + '\\n-----END PRIVATE KEY-----\\n"}',
     EAUTH, "private_key: the private key is not a PKCS#8 PrivateKeyInfo"),
    ('{"type": "authorized_user", "client_id": "c", "client_secret": "s", "refresh_token": "r", '
     '"token_uri": "http://example.com/token"}', EAUTH, "must be an https:// URL"),
])
def test_bad_key_files(setting, tmp_path, content, code, why):
    b, env, opts = setting
    path = tmp_path / "bad.json"
    path.write_text(content)
    env["GOOGLE_APPLICATION_CREDENTIALS"] = str(path)
    a = one(f"gs://{b}", {"op": "stat", "key": "k"}, env, opts)
    assert a["code"] == code, a
    assert f"GOOGLE_APPLICATION_CREDENTIALS file {path}" in a["error"] and why in a["error"], a
    assert PEM_LINE not in a["error"]


def test_a_missing_or_unreadable_key_file(setting, tmp_path):
    b, env, opts = setting
    env["GOOGLE_APPLICATION_CREDENTIALS"] = str(tmp_path / "absent.json")
    a = one(f"gs://{b}", {"op": "stat", "key": "k"}, env, opts)
    assert a["code"] == ENOTFOUND and f"{tmp_path / 'absent.json'}: no such file" in a["error"]
    env["GOOGLE_APPLICATION_CREDENTIALS"] = str(tmp_path)
    a = one(f"gs://{b}", {"op": "stat", "key": "k"}, env, opts)
    assert a["code"] == EAUTH and "readable regular file" in a["error"]


def test_retries_on_throttling_and_server_errors_never_on_a_4xx(fakes, setting, tmp_path):
    b, env, opts = setting
    env["GOOGLE_APPLICATION_CREDENTIALS"] = write_key(tmp_path, fakes.service_account())
    fakes.fail_storage = [503, 429, 500]
    a = one(f"gs://{b}/p", {"op": "put", "key": "k", "data": hexof("x"), "mode": "if-absent"}, env, opts)
    assert a["ok"], a
    assert [s for *_, s in fakes.storage] == [503, 429, 500, 200]
    # Never on another 4xx: one request, its status in the message.
    fakes.storage.clear()
    fakes.fail_storage = [400]
    a = one(f"gs://{b}/p", {"op": "stat", "key": "k"}, env, opts)
    assert a["code"] == -7 and a["error"] == f"gs://{b}/p/k: HTTP 400 injected: injected by the test"
    assert [s for *_, s in fakes.storage] == [400]
    # A server that keeps failing: worth retrying later (ETRANSIENT), after
    # the client's five attempts.
    fakes.storage.clear()
    fakes.fail_storage = [503] * 5
    a = one(f"gs://{b}/p", {"op": "stat", "key": "k"}, env, opts)
    assert a["code"] == -10 and a["error"].startswith(f"gs://{b}/p/k: HTTP 503 injected")
    assert [s for *_, s in fakes.storage] == [503] * 5


def test_threads_share_one_token(fakes, setting, tmp_path):
    """Eight threads on one open store, released together with no token
    cached yet: one token request; they all use it. And with a token that
    has less than five minutes left, one refresh among them."""
    b, env, opts = setting
    env["GOOGLE_APPLICATION_CREDENTIALS"] = write_key(tmp_path, fakes.service_account())
    fakes.expires_in = 303
    work = [{"op": "put", "key": "k", "data": "00"}, {"op": "stat", "key": "k"}]
    a = drive(f"gs://{b}", [{"op": "parallel", "threads": 8, "commands": work},
                            {"op": "sleep", "seconds": 4.5},
                            {"op": "parallel", "threads": 8, "commands": [{"op": "stat", "key": "k"}]}], env, opts)
    assert all(x["ok"] for t in a[0]["answers"] + a[2]["answers"] for x in t), a
    assert fakes.token_count() == 2
    assert len({auth for *_, auth, _ in fakes.storage}) == 2
