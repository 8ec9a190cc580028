"""The AWS credential chain (src/store/s3/creds.h) end to end: the real
provider, its HTTP client on libcurl, against fakes of the services that
cannot run here (tests/e2e/awsfakes.py: EC2 instance metadata, the ECS
container endpoint, STS), driven by tests/tools/aws-creds-probe, which
prints each get's source, key id and expiry (never a secret).

What is checked: each source is found and used as its service expects
(IMDSv2's token, ECS's Authorization, STS's form and SigV4 signature);
the chain's precedence; refresh before expiry (credentials with less than
five minutes left are fetched again at the next get: a fake issuing
4-minute credentials is asked at every get, one issuing 1-hour credentials
once, even from several threads); a 500 retried; a service that hangs
stopped by the timeouts with an error naming it; IMDS disabled; nothing
found naming what was tried; secrets never in messages.

Then the chain as the S3 store uses it, against the real S3 servers of
s3servers.py through tests/tools/store-tool: credentials from a fake ECS
endpoint, from a profile named in the store options, and (moto) from a
role assumed at moto's own STS, whose read-only policy shows that the
role's credentials signed the requests.

Every probe runs with a private HOME and AWS_EC2_METADATA_DISABLED=true
unless the test points AWS_EC2_METADATA_SERVICE_ENDPOINT at a fake: nothing
ever asks 169.254.169.254.
"""
import os
import re
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from awsfakes import FakeEcs, FakeImds, FakeSts
from conftest import SANITIZER_MARKERS, TETHER_BIN


def _find_probe():
    build = Path(TETHER_BIN).resolve().parent
    for candidate in (build / "tests" / "aws-creds-probe", build / "aws-creds-probe"):
        if os.access(candidate, os.X_OK):
            return str(candidate)
    return None


PROBE = _find_probe()
pytestmark = pytest.mark.skipif(PROBE is None, reason="aws-creds-probe is not built next to tether")

GET_LINE = re.compile(r"^get (\d+): source=(.+?) key=(\S+) token=(yes|no) expires_in=(\S+)$")
ROLE = "arn:aws:iam::123456789012:role/tether-test"


class Probe:
    def __init__(self, home):
        self.home = home

    def run(self, env=None, *args, timeout=60):
        full = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(self.home),
                "AWS_EC2_METADATA_DISABLED": "true"}
        for k in ("ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS", "TSAN_OPTIONS"):
            if k in os.environ:
                full[k] = os.environ[k]
        for k, v in (env or {}).items():
            if v is None:
                full.pop(k, None)
            else:
                full[k] = v
        start = time.monotonic()
        p = subprocess.run([PROBE, *args], env=full, capture_output=True, text=True, timeout=timeout)
        p.elapsed = time.monotonic() - start
        for marker in SANITIZER_MARKERS:
            assert marker not in p.stderr, p.stderr
        p.gets = []
        for line in p.stdout.splitlines():
            m = GET_LINE.match(line)
            if not m:
                assert line.startswith(("region=", "endpoint=")), "unexpected output: %r" % line
                continue
            p.gets.append({"source": m[2], "key": m[3], "token": m[4] == "yes",
                           "expires_in": None if m[5] == "never" else int(m[5])})
        return p


@pytest.fixture
def probe(tmp_path):
    home = tmp_path / "home"
    (home / ".aws").mkdir(parents=True)
    return Probe(home)


def write_aws(probe, credentials=None, config=None):
    if credentials is not None:
        (probe.home / ".aws" / "credentials").write_text(credentials)
    if config is not None:
        (probe.home / ".aws" / "config").write_text(config)


def ok(p):
    assert p.returncode == 0, p.stderr
    return p.gets


# ---------------------------------------------------------------- static


def test_static_sources_and_precedence(probe):
    write_aws(probe, credentials="[default]\naws_access_key_id = AKIAFILE\naws_secret_access_key = s\n")
    assert ok(probe.run())[0] == {"source": "profile default", "key": "AKIAFILE", "token": False,
                                  "expires_in": None}
    env = {"AWS_ACCESS_KEY_ID": "AKIAENV", "AWS_SECRET_ACCESS_KEY": "s2"}
    assert ok(probe.run(env))[0]["source"] == "environment"
    opts = '{"access_key_id": "AKIAOPT", "secret_access_key": "s3"}'
    assert ok(probe.run(env, "--options", opts))[0]["key"] == "AKIAOPT"


def test_nothing_found_names_what_was_tried(probe):
    p = probe.run()
    assert p.returncode == 1
    msg = p.stderr
    assert "no AWS credentials found: tried store options (no access_key_id)" in msg
    for tried in ("environment (no AWS_ACCESS_KEY_ID)", "web identity (no AWS_WEB_IDENTITY_TOKEN_FILE)",
                  "profile 'default' (not in %s/.aws/credentials" % probe.home,
                  "ECS container endpoint (no AWS_CONTAINER_CREDENTIALS_RELATIVE_URI nor _FULL_URI)",
                  "EC2 instance metadata (AWS_EC2_METADATA_DISABLED=true)"):
        assert tried in msg


def test_credential_process_is_not_run(probe, tmp_path):
    marker = tmp_path / "ran"
    write_aws(probe, config="[profile p]\ncredential_process = /bin/sh -c 'touch %s'\n" % marker)
    p = probe.run({"AWS_PROFILE": "p"})
    assert p.returncode == 1
    assert "profile 'p' in %s/.aws/config sets credential_process" % probe.home in p.stderr
    assert not marker.exists()


def test_malformed_file_named_by_line(probe):
    write_aws(probe, credentials="[default]\naws_access_key_id = A\nnot a setting\n")
    p = probe.run()
    assert p.returncode == 1
    assert "%s/.aws/credentials:3: expected 'name = value'" % probe.home in p.stderr


def test_region_and_endpoint(probe):
    write_aws(probe, config="[profile w]\nregion = eu-west-3\nservices = local\n"
                            "[services local]\nsts =\n  endpoint_url = http://127.0.0.1:9/\n")
    assert probe.run({"AWS_PROFILE": "w"}, "--region").stdout == "region=eu-west-3\n"
    assert probe.run({"AWS_PROFILE": "w", "AWS_REGION": "ap-south-1"}, "--region").stdout == "region=ap-south-1\n"
    assert probe.run({"AWS_PROFILE": "w"}, "--endpoint", "sts").stdout == "endpoint=http://127.0.0.1:9/\n"
    assert probe.run({"AWS_PROFILE": "w"}, "--endpoint", "s3").stdout == "endpoint=(none)\n"
    assert probe.run({}, "--region").stdout == "region=us-east-1\n"


# ---------------------------------------------------------------- IMDS


def imds_env(imds):
    return {"AWS_EC2_METADATA_DISABLED": None, "AWS_EC2_METADATA_SERVICE_ENDPOINT": imds.url}


def test_imds_v2(probe):
    with FakeImds() as imds:
        gets = ok(probe.run(imds_env(imds), "--gets", "2"))
        # The fake refuses a GET without its token, as IMDSv2 does.
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(imds.url + "/latest/meta-data/iam/security-credentials/", timeout=5)
        assert e.value.code == 401
    assert [g["key"] for g in gets] == ["ASIAIMDS0001", "ASIAIMDS0001"]
    assert gets[0]["source"] == "EC2 instance metadata" and gets[0]["token"]
    assert 3500 < gets[0]["expires_in"] <= 3600
    served = [(m, path) for m, path, status in imds.served(200)]
    assert served == [("PUT", "/latest/api/token"), ("GET", "/latest/meta-data/iam/security-credentials/"),
                      ("GET", "/latest/meta-data/iam/security-credentials/tether-test-role")]
    assert imds.served(401) == [("GET", "/latest/meta-data/iam/security-credentials/", 401)]


def test_imds_disabled_is_not_asked(probe):
    with FakeImds() as imds:
        p = probe.run(dict(imds_env(imds), AWS_EC2_METADATA_DISABLED="TRUE"))
    assert p.returncode == 1 and "EC2 instance metadata (AWS_EC2_METADATA_DISABLED=true)" in p.stderr
    assert imds.served() == []


def test_environment_before_imds(probe):
    with FakeImds() as imds:
        env = dict(imds_env(imds), AWS_ACCESS_KEY_ID="AKIAENV", AWS_SECRET_ACCESS_KEY="s")
        assert ok(probe.run(env))[0]["source"] == "environment"
    assert imds.served() == []


@pytest.mark.parametrize("ttl, fetches", [(240, 4), (3600, 1)])
def test_imds_refresh_before_expiry(probe, ttl, fetches):
    """Less than five minutes left: fetched again at the next get."""
    with FakeImds(ttl=ttl) as imds:
        gets = ok(probe.run(imds_env(imds), "--gets", "3"))
    assert len(imds.issued) == fetches  # the first at start, then one per get when short-lived
    keys = [g["key"] for g in gets]
    if ttl < 300:
        assert keys == ["ASIAIMDS0002", "ASIAIMDS0003", "ASIAIMDS0004"]
    else:
        assert keys == ["ASIAIMDS0001"] * 3


def test_imds_500_is_retried(probe):
    with FakeImds(fail_first=[500]) as imds:
        gets = ok(probe.run(imds_env(imds)))
    assert gets[0]["key"] == "ASIAIMDS0001"
    assert [r[2] for r in imds.served()] == [500, 200, 200, 200]


def test_imds_that_hangs_does_not_hang_the_command(probe):
    with FakeImds(hang=True) as imds:
        p = probe.run(imds_env(imds), timeout=30)
    assert p.returncode == 1
    assert "no AWS credentials found" in p.stderr
    assert "EC2 instance metadata: PUT %s/latest/api/token" % imds.url in p.stderr
    assert "(2 attempts)" in p.stderr
    assert p.elapsed < 12, p.elapsed  # 2 attempts of at most 2 s, and a backoff


def test_no_imds_at_all(probe):
    with FakeImds() as imds:
        url = imds.url  # a port that is closed once the fake stops
    p = probe.run({"AWS_EC2_METADATA_DISABLED": None, "AWS_EC2_METADATA_SERVICE_ENDPOINT": url})
    assert p.returncode == 1 and "EC2 instance metadata: PUT %s/latest/api/token" % url in p.stderr
    assert p.elapsed < 10


# ---------------------------------------------------------------- ECS


def test_ecs_with_token(probe):
    with FakeEcs(auth="Bearer sekrit-token") as ecs:
        env = {"AWS_CONTAINER_CREDENTIALS_FULL_URI": ecs.credentials_url,
               "AWS_CONTAINER_AUTHORIZATION_TOKEN": "Bearer sekrit-token"}
        gets = ok(probe.run(env))
        assert gets[0] == {"source": "ECS container endpoint", "key": "ASIAECS0001", "token": True,
                           "expires_in": gets[0]["expires_in"]}
        wrong = probe.run(dict(env, AWS_CONTAINER_AUTHORIZATION_TOKEN="Bearer nope"))
        missing = probe.run({"AWS_CONTAINER_CREDENTIALS_FULL_URI": ecs.credentials_url})
    for p in (wrong, missing):
        assert p.returncode == 1
        assert ("ECS container endpoint: GET %s: HTTP 401 AccessDeniedException: " % ecs.credentials_url
                in p.stderr)
        assert "nope" not in p.stderr and "sekrit" not in p.stderr


def test_ecs_token_file_read_at_each_fetch(probe, tmp_path):
    token = tmp_path / "token"
    token.write_text("first\n")
    with FakeEcs(auth="first", ttl=240) as ecs:
        env = {"AWS_CONTAINER_CREDENTIALS_FULL_URI": ecs.credentials_url,
               "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE": str(token),
               "AWS_CONTAINER_AUTHORIZATION_TOKEN": "ignored-when-the-file-is-set"}
        p = subprocess.Popen([PROBE, "--gets", "2", "--sleep", "1.5"], env=dict(probe_env(probe), **env),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 20
        while len(ecs.issued) < 2 and time.monotonic() < deadline:  # the start's fetch and the first get's
            time.sleep(0.02)
        ecs.auth = "second"
        token.write_text("second")
        out, err = p.communicate(timeout=30)
    assert p.returncode == 0, err
    assert [GET_LINE.match(line)[3] for line in out.splitlines()] == ["ASIAECS0002", "ASIAECS0003"]


def probe_env(probe):
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(probe.home),
            "AWS_EC2_METADATA_DISABLED": "true"}


@pytest.mark.parametrize("ttl, fetches", [(240, 4), (3600, 1)])
def test_ecs_refresh_from_threads(probe, ttl, fetches):
    """Four threads share one provider: one fetch at a time, and a long-lived
    answer is fetched once for all of them."""
    with FakeEcs(ttl=ttl) as ecs:
        gets = ok(probe.run({"AWS_CONTAINER_CREDENTIALS_FULL_URI": ecs.credentials_url},
                            "--threads", "4", "--gets", "3" if ttl < 300 else "5"))
    assert len(gets) == (12 if ttl < 300 else 20)
    if ttl < 300:
        assert len(ecs.issued) == 13
        assert len({g["key"] for g in gets}) == 12  # each get its own fetch
    else:
        assert len(ecs.issued) == fetches and {g["key"] for g in gets} == {"ASIAECS0001"}


def test_ecs_500_retried_and_hang_timed_out(probe):
    with FakeEcs(fail_first=[503]) as ecs:
        assert ok(probe.run({"AWS_CONTAINER_CREDENTIALS_FULL_URI": ecs.credentials_url}))[0]["key"] == "ASIAECS0001"
        assert [r[2] for r in ecs.served()] == [503, 200]
    with FakeEcs(fail_first=[500, 500]) as ecs:
        p = probe.run({"AWS_CONTAINER_CREDENTIALS_FULL_URI": ecs.credentials_url})
        assert p.returncode == 1 and "ECS container endpoint: GET %s: HTTP 500" % ecs.credentials_url in p.stderr
    with FakeEcs(hang=True) as ecs:
        p = probe.run({"AWS_CONTAINER_CREDENTIALS_FULL_URI": ecs.credentials_url}, timeout=30)
    assert p.returncode == 1
    assert p.stderr.startswith("aws-creds-probe: ECS container endpoint: GET %s" % ecs.credentials_url)
    assert "(2 attempts)" in p.stderr and p.elapsed < 12


@pytest.mark.parametrize("answer, want", [
    ((200, "application/json", b'{"AccessKeyId": "ASIAX", "SecretAccessKey": TopSecretValue}'),
     "the answer is not JSON (at line 1, column"),
    ((200, "application/json", b'["ASIAX", "TopSecretValue"]'), "the answer is not a JSON object"),
    ((200, "application/json", b'{"AccessKeyId": "ASIAX"}'), "the answer has no SecretAccessKey"),
    ((200, "application/json", b'{"AccessKeyId": "ASIAX", "SecretAccessKey": "TopSecretValue", '
                               b'"Expiration": "soon\\u001b[31m"}'),
     "the answer's Expiration 'soon?[31m' is not an ISO 8601 UTC time"),
    ((403, "application/json", b'{"code": "Denied\\u001b]0;pwned\\u0007", "message": "no"}'),
     "HTTP 403 Denied?]0;pwned?: no"),
])
def test_ecs_hostile_answers(probe, answer, want):
    """Refused, named, without the secret and without control characters."""
    with FakeEcs() as ecs:
        ecs.answer = answer
        p = probe.run({"AWS_CONTAINER_CREDENTIALS_FULL_URI": ecs.credentials_url})
    assert p.returncode == 1
    assert want in p.stderr, p.stderr
    assert "TopSecretValue" not in p.stderr and "\x1b" not in p.stderr and "\x07" not in p.stderr


def test_sts_error_without_control_characters(probe):
    with FakeSts(ROLE, signers=[("AKIABASE", "bs", None)]) as sts:
        sts.answer = (403, "text/xml", b"<ErrorResponse><Error><Code>Bad&#27;[2J</Code><Message>m&#7;</Message>"
                                       b"</Error></ErrorResponse>")
        env = {"AWS_ACCESS_KEY_ID": "AKIABASE", "AWS_SECRET_ACCESS_KEY": "bs", "AWS_ENDPOINT_URL_STS": sts.url}
        p = probe.run(env, "--options", '{"allow_http": true, "role_arn": "%s"}' % ROLE)
    assert p.returncode == 1 and "HTTP 403 Bad?[2J: m?" in p.stderr, p.stderr
    assert "\x1b" not in p.stderr


def test_ecs_full_uri_must_be_local_or_https(probe):
    p = probe.run({"AWS_CONTAINER_CREDENTIALS_FULL_URI": "http://192.0.2.1/creds"})
    assert p.returncode == 1 and "plain http is allowed only to a loopback address" in p.stderr


# ---------------------------------------------------------------- STS


def test_web_identity(probe, tmp_path):
    token = tmp_path / "jwt"
    token.write_text("eyJ.first.jwt\n")
    with FakeSts(ROLE, web_identity_token="eyJ.first.jwt", ttl=240) as sts:
        env = {"AWS_WEB_IDENTITY_TOKEN_FILE": str(token), "AWS_ROLE_ARN": ROLE,
               "AWS_ROLE_SESSION_NAME": "ci-run-7", "AWS_ENDPOINT_URL_STS": sts.url}
        gets = ok(probe.run(env, "--options", '{"allow_http": true}'))
        assert gets[0]["source"] == "web identity" and gets[0]["key"] == "ASIASTS0002"
        assert sts.seen[0]["Action"] == "AssumeRoleWithWebIdentity"
        assert sts.seen[0]["RoleSessionName"] == "ci-run-7"
        # Another role, another token: STS's refusals, named, the token never shown.
        bad = probe.run(dict(env, AWS_ROLE_ARN=ROLE + "-other"), "--options", '{"allow_http": true}')
        token.write_text("eyJ.stale.jwt")
        stale = probe.run(env, "--options", '{"allow_http": true}')
    assert bad.returncode == 1
    assert ("web identity: STS AssumeRoleWithWebIdentity at %s: HTTP 403 AccessDenied: Not authorized" % sts.url
            in bad.stderr)
    assert stale.returncode == 1 and "HTTP 400 InvalidIdentityToken" in stale.stderr
    assert "eyJ" not in stale.stderr


def test_web_identity_from_profile(probe, tmp_path):
    token = tmp_path / "jwt"
    token.write_text("tok")
    write_aws(probe, config="[profile wi]\nrole_arn = %s\nweb_identity_token_file = %s\n" % (ROLE, token))
    with FakeSts(ROLE, web_identity_token="tok") as sts:
        gets = ok(probe.run({"AWS_ENDPOINT_URL_STS": sts.url}, "--options",
                            '{"allow_http": true, "profile": "wi"}'))
    assert gets[0]["source"] == "profile wi (web identity)"
    assert re.fullmatch(r"tether-\d+", sts.seen[0]["RoleSessionName"])


def test_assume_role_from_options_signed_with_the_environment(probe):
    with FakeSts(ROLE, signers=[("AKIABASE", "base-secret", None)]) as sts:
        env = {"AWS_ACCESS_KEY_ID": "AKIABASE", "AWS_SECRET_ACCESS_KEY": "base-secret",
               "AWS_ENDPOINT_URL_STS": sts.url}
        opts = '{"allow_http": true, "role_arn": "%s"}' % ROLE
        gets = ok(probe.run(env, "--options", opts, "--gets", "2"))
        wrong = probe.run(dict(env, AWS_SECRET_ACCESS_KEY="not-the-secret"), "--options", opts)
        region = probe.run(dict(env, AWS_REGION="eu-west-1"), "--options", opts)
    assert [g["key"] for g in gets] == ["ASIASTS0001", "ASIASTS0001"]
    assert gets[0]["source"] == "role_arn (AssumeRole)"
    assert sts.seen[0]["Action"] == "AssumeRole" and sts.seen[0]["RoleArn"] == ROLE
    assert wrong.returncode == 1
    assert "role_arn (AssumeRole): STS AssumeRole at %s: HTTP 403 SignatureDoesNotMatch" % sts.url in wrong.stderr
    assert "not-the-secret" not in wrong.stderr
    assert region.returncode == 1 and "Credential should be scoped to us-east-1/sts" in region.stderr


def test_assume_role_profile_over_source_profile(probe):
    write_aws(probe,
              credentials="[base]\naws_access_key_id = AKIABASE\naws_secret_access_key = bs\n"
                          "aws_session_token = base-session\n",
              config="[profile dev]\nrole_arn = %s\nsource_profile = base\nexternal_id = ext-42\n"
                     "role_session_name = dev-session\nregion = eu-central-1\n" % ROLE)
    with FakeSts(ROLE, region="eu-central-1", signers=[("AKIABASE", "bs", "base-session")],
                 external_id="ext-42") as sts:
        gets = ok(probe.run({"AWS_PROFILE": "dev", "AWS_ENDPOINT_URL_STS": sts.url},
                            "--options", '{"allow_http": true}'))
        sts.external_id = "another"
        refused = probe.run({"AWS_PROFILE": "dev", "AWS_ENDPOINT_URL_STS": sts.url},
                            "--options", '{"allow_http": true}')
    assert gets[0]["source"] == "profile dev (AssumeRole)" and gets[0]["key"] == "ASIASTS0001"
    assert sts.seen[0]["ExternalId"] == "ext-42" and sts.seen[0]["RoleSessionName"] == "dev-session"
    assert refused.returncode == 1 and "HTTP 403 AccessDenied: ExternalId is missing or wrong" in refused.stderr


def test_assume_role_over_ecs_credentials_refreshes_both(probe):
    """credential_source = EcsContainer: STS is asked with the ECS
    credentials (their session token too); short-lived ones are fetched
    again, the ECS ones first."""
    write_aws(probe, config="[profile task]\nrole_arn = %s\ncredential_source = EcsContainer\n" % ROLE)
    with FakeEcs(ttl=240) as ecs, FakeSts(ROLE, ttl=240) as sts:
        # The fake STS learns each key pair the fake ECS issues.
        orig = ecs.issue

        def issue_and_allow():
            cred = orig()
            sts.allow(cred[0], cred[1], cred[2])
            return cred
        ecs.issue = issue_and_allow
        gets = ok(probe.run({"AWS_PROFILE": "task", "AWS_ENDPOINT_URL_STS": sts.url,
                             "AWS_CONTAINER_CREDENTIALS_FULL_URI": ecs.credentials_url},
                            "--options", '{"allow_http": true}', "--gets", "2"))
    assert [g["key"] for g in gets] == ["ASIASTS0002", "ASIASTS0003"]
    assert len(ecs.issued) == 3 and len(sts.issued) == 3
    assert sts.served(403) == []


def test_sts_500_then_200(probe):
    with FakeSts(ROLE, signers=[("AKIABASE", "bs", None)], fail_first=[500]) as sts:
        env = {"AWS_ACCESS_KEY_ID": "AKIABASE", "AWS_SECRET_ACCESS_KEY": "bs", "AWS_ENDPOINT_URL_STS": sts.url}
        gets = ok(probe.run(env, "--options", '{"allow_http": true, "role_arn": "%s"}' % ROLE))
    assert gets[0]["key"] == "ASIASTS0001"
    assert [r[2] for r in sts.served()] == [500, 200]


def test_sts_that_hangs_times_out_as_the_options_say(probe):
    with FakeSts(ROLE, signers=[("AKIABASE", "bs", None)], hang=True) as sts:
        env = {"AWS_ACCESS_KEY_ID": "AKIABASE", "AWS_SECRET_ACCESS_KEY": "bs", "AWS_ENDPOINT_URL_STS": sts.url}
        opts = '{"allow_http": true, "role_arn": "%s", "timeout": 1, "connect_timeout": 1}' % ROLE
        p = probe.run(env, "--options", opts, timeout=60)
    assert p.returncode == 1
    assert p.stderr.startswith("aws-creds-probe: role_arn (AssumeRole): STS AssumeRole at %s: POST %s" % (sts.url, sts.url))
    assert "(5 attempts)" in p.stderr and p.elapsed < 20, (p.stderr, p.elapsed)


# ---------------------------------------------------------------- a real S3 server
# The chain as the S3 store (tether-store-s3.so) uses it, through
# tests/tools/store-tool, against the real servers of s3servers.py: the
# credentials come from a fake ECS endpoint, a profile file, or (moto only)
# moto's own STS AssumeRole, and the server checks the signatures.

BUILD = Path(TETHER_BIN).resolve().parent
STORE_TOOL = BUILD / "tests" / "store-tool"
needs_store = pytest.mark.skipif(not (BUILD / "tether-store-s3.so").exists() or not STORE_TOOL.exists(),
                                 reason="tether-store-s3.so or store-tool is not built")


def s3_env(srv, **extra):
    """The server's environment for a tether process, without its keys."""
    env = srv.env(os.environ)
    env["TETHER_MODULE_PATH"] = str(BUILD)
    del env["AWS_ACCESS_KEY_ID"], env["AWS_SECRET_ACCESS_KEY"]
    env.update(extra)
    return env


def store_tool(env, options, uri, *args, stdin=b""):
    p = subprocess.run([str(STORE_TOOL), "--options", options, uri, *args], input=stdin, env=env,
                       capture_output=True, timeout=120)
    p.err = p.stderr.decode("utf-8", "replace")
    for marker in SANITIZER_MARKERS:
        assert marker not in p.err, p.err
    return p


@needs_store
def test_s3_with_credentials_from_ecs(s3_server):
    srv = s3_server
    uri = "s3://%s/creds" % srv.bucket("ecs")
    with FakeEcs(auth="Bearer t", fixed=(srv.access_key, srv.secret)) as ecs:
        env = s3_env(srv, AWS_CONTAINER_CREDENTIALS_FULL_URI=ecs.credentials_url,
                     AWS_CONTAINER_AUTHORIZATION_TOKEN="Bearer t")
        put = store_tool(env, '{"allow_http": true}', uri, "put", "k", stdin=b"from ecs")
        get = store_tool(env, '{"allow_http": true}', uri, "get", "k")
        assert put.returncode == 0, put.err
        assert get.returncode == 0 and get.stdout == b"from ecs", get.err
        assert ecs.served(200)
        ecs.fixed = (srv.access_key, "not-" + srv.secret)
        wrong = store_tool(env, '{"allow_http": true}', uri, "get", "k")
    assert wrong.returncode == 1 and uri in wrong.err and srv.secret not in wrong.err


@needs_store
def test_s3_with_a_profile_named_in_the_options(s3_server, tmp_path):
    srv = s3_server
    uri = "s3://%s" % srv.bucket("profile")
    creds = tmp_path / "credentials"
    creds.write_text("[lab]\naws_access_key_id = %s\naws_secret_access_key = %s\n" % (srv.access_key, srv.secret))
    # Wrong keys in the environment: the profile the options name wins.
    env = s3_env(srv, AWS_SHARED_CREDENTIALS_FILE=str(creds), AWS_ACCESS_KEY_ID="AKIAWRONG",
                 AWS_SECRET_ACCESS_KEY="wrong")
    put = store_tool(env, '{"allow_http": true, "profile": "lab"}', uri, "put", "a/b", stdin=b"x")
    assert put.returncode == 0, put.err
    refused = store_tool(env, '{"allow_http": true}', uri, "put", "a/c", stdin=b"x")
    assert refused.returncode == 1 and uri in refused.err


ROLE_TRUST = ('{"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Principal": {"AWS": "*"}, '
              '"Action": "sts:AssumeRole"}]}')
READ_ONLY = ('{"Version": "2012-10-17", "Statement": [{"Effect": "Allow", '
             '"Action": ["s3:GetObject", "s3:ListBucket"], "Resource": "*"}]}')


@needs_store
def test_s3_with_a_role_assumed_through_motos_sts(moto_server):
    """role_arn in the options: AssumeRole signed with the user's keys at
    moto's STS (which checks the signature), then S3 with the role's
    temporary credentials and session token. The role may only read: a
    read works, a write is refused, so the role's credentials were used."""
    import boto3
    srv = moto_server
    iam = boto3.client("iam", endpoint_url=srv.endpoint, region_name=srv.region,
                       aws_access_key_id=srv.access_key, aws_secret_access_key=srv.secret)
    name = "tether-reader-%d" % time.time_ns()
    arn = iam.create_role(RoleName=name, AssumeRolePolicyDocument=ROLE_TRUST)["Role"]["Arn"]
    iam.put_role_policy(RoleName=name, PolicyName="read", PolicyDocument=READ_ONLY)
    bucket = srv.bucket("role")
    srv.client().put_object(Bucket=bucket, Key="k", Body=b"written by the user")
    env = s3_env(srv, AWS_ACCESS_KEY_ID=srv.access_key, AWS_SECRET_ACCESS_KEY=srv.secret)
    opts = '{"allow_http": true, "role_arn": "%s"}' % arn
    get = store_tool(env, opts, "s3://" + bucket, "get", "k")
    assert get.returncode == 0 and get.stdout == b"written by the user", get.err
    put = store_tool(env, opts, "s3://" + bucket, "put", "k2", stdin=b"x")
    assert put.returncode == 1 and "AccessDenied" in put.err, put.err
    # The user's own keys may write: the refusal was the role's.
    assert store_tool(env, '{"allow_http": true}', "s3://" + bucket, "put", "k2", stdin=b"x").returncode == 0


@pytest.mark.parametrize("ttl, kept", [(240, True), (30, False)])
def test_failed_refresh_keeps_credentials_good_for_a_minute(probe, ttl, kept):
    """The service fails after its first answer: a refresh that fails keeps
    credentials still good for more than a minute, else it is an error."""
    with FakeEcs(ttl=ttl) as ecs:
        first = ecs.issue

        def issue_once():
            cred = first()
            ecs.answer = (500, "text/plain", b"down")
            return cred
        ecs.issue = issue_once
        p = probe.run({"AWS_CONTAINER_CREDENTIALS_FULL_URI": ecs.credentials_url}, "--gets", "2")
    assert len(ecs.issued) == 1
    if kept:
        assert p.returncode == 0, p.stderr
        assert [g["key"] for g in p.gets] == ["ASIAECS0001", "ASIAECS0001"]
    else:
        assert p.returncode == 1 and p.gets == []
        assert "ECS container endpoint: GET %s: HTTP 500" % ecs.credentials_url in p.stderr
