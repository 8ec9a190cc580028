"""Real S3 servers for the tests, started on 127.0.0.1 and stopped by PID.

Two servers, each started at most once per test session and only when a
test asks for it (the fixtures are session-scoped and lazy: a session that
selects no S3 test starts nothing):

  seaweedfs_server  SeaweedFS `weed mini` (scripts/install-deps builds and
                    caches it; $TETHER_WEED names another binary). The
                    stricter server: it checks SigV4 signatures and payload
                    hashes against the identities of an s3.json.
  moto_server       moto's server (tests/requirements.txt) in authenticated
                    mode: its first calls create an IAM user, a policy and
                    an access key, after which SigV4 is enforced.
  s3_server         either of them, parametrised over ["seaweedfs", "moto"]:
                    a test that takes it runs once against each.

Each is an S3Server: `endpoint` (http://127.0.0.1:PORT), `region`,
`access_key`, `secret`, `pid`; `bucket(name, versioned=False)` makes a fresh
bucket and returns its name (the name given plus a per-session counter, so
tests never share one); `client(**config)` a boto3 S3 client (path-style,
no retries, nothing read from ~/.aws); `env(base=None)` the environment a
tether process needs to reach it the way AWS tools do.

A server that is not installed is a skip, which conftest.py turns into a
failure under TETHER_REQUIRE_TOOLS=1 (`make check`).

What either server does differently from AWS, found while writing these
(tests/e2e/test_s3_servers.py checks what the store tests rely on):
  - SeaweedFS's `weed mini` reports anonymous statistics to
    telemetry.seaweedfs.com unless -master.telemetry=false, guesses a
    non-loopback address without -ip, always starts an admin server and a
    maintenance worker (on ports of their own, -admin.port*), and creates a
    bucket on the first upload into it (-s3.autoCreateBucket, off here, so
    a missing bucket is NoSuchBucket as on AWS).
  - moto accepts any signature until INITIAL_NO_AUTH_ACTION_COUNT requests
    have been served; its unauthenticated /moto-api/ endpoints can reset
    that (and all state): never call them from a test.
"""
import ctypes
import itertools
import os
import re
import secrets
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

REGION = "us-east-1"
# Where scripts/install-deps links the pinned SeaweedFS build.
TETHER_DEPS = Path(os.environ.get("TETHER_DEPS") or Path.home() / ".local" / "share" / "tether-deps")
READY_TIMEOUT = 60.0
STOP_TIMEOUT = 15.0

_PR_SET_PDEATHSIG = 1
_bucket_serial = itertools.count(1)


def installed_binary(env_var, name):
    """A test server's program: $env_var, scripts/install-deps' link
    $TETHER_DEPS/bin/name, or name on PATH; None when there is none."""
    for candidate in (os.environ.get(env_var), TETHER_DEPS / "bin" / name):
        if candidate and os.access(candidate, os.X_OK):
            return str(candidate)
    from shutil import which
    return which(name)


def weed_binary():
    """SeaweedFS's weed: $TETHER_WEED, scripts/install-deps' link, or PATH."""
    return installed_binary("TETHER_WEED", "weed")


def moto_binary():
    """moto's server script, from the venv the tests run in."""
    path = Path(sys.executable).parent / "moto_server"
    if not os.access(path, os.X_OK):
        return None
    try:
        import moto.server  # noqa: F401 - that it imports is the check
    except ImportError:
        return None
    return str(path)


def free_ports(n):
    """n distinct TCP ports free on 127.0.0.1 just now (held open together
    while they are chosen, so they differ from each other)."""
    socks = []
    try:
        for _ in range(n):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def _die_with_parent():
    """In the child before exec: SIGTERM when the test process dies, so a
    killed pytest leaves no server behind."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)


def listening_sockets(pid):
    """(address, port, protocol) of every TCP socket listening and every
    UDP socket bound by process pid (all its threads share its fds), read
    from /proc: IPv4 addresses dotted, IPv6 ones as the kernel's hex."""
    inodes = set()
    fd_dir = Path(f"/proc/{pid}/fd")
    for fd in fd_dir.iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue  # closed meanwhile
        m = re.fullmatch(r"socket:\[(\d+)\]", target)
        if m:
            inodes.add(m.group(1))
    found = []
    for proto in ("tcp", "tcp6", "udp", "udp6"):
        table = Path(f"/proc/{pid}/net/{proto}")
        if not table.exists():
            continue
        for line in table.read_text().splitlines()[1:]:
            fields = line.split()
            local, state, inode = fields[1], fields[3], fields[9]
            if inode not in inodes:
                continue
            if proto.startswith("tcp") and state != "0A":  # 0A: LISTEN
                continue
            addr_hex, port_hex = local.split(":")
            if len(addr_hex) == 8:
                addr = socket.inet_ntoa(bytes.fromhex(addr_hex)[::-1])
            else:
                addr = addr_hex
            found.append((addr, int(port_hex, 16), proto))
    return sorted(set(found))


def _process_tree(pid):
    """pid and every descendant, from /proc."""
    children = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue
        fields = text.rsplit(")", 1)[1].split()
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(children.get(p, []))
    return out


def stop_process(proc):
    """SIGTERM to a server we started (a Popen; None: nothing), SIGKILL if
    it lingers; then anything it left behind (none is expected) is killed,
    each by its PID."""
    if proc is None:
        return
    tree = _process_tree(proc.pid)
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(STOP_TIMEOUT)
    for pid in tree[1:]:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


class S3Server:
    """One running S3 server (see the module's docstring)."""

    def __init__(self, kind, workdir, region=REGION):
        self.kind = kind
        self.workdir = Path(workdir)
        self.region = region
        self.proc = None
        self.port = None
        self.access_key = None
        self.secret = None
        self.started_in = None  # seconds from exec to ready
        self.log_path = self.workdir / f"{kind}.log"
        # Empty AWS config and credentials files: tether and boto3 read
        # these instead of the user's ~/.aws.
        self.aws_config = self.workdir / "aws-config"
        self.aws_credentials = self.workdir / "aws-credentials"
        self.aws_config.write_text("")
        self.aws_credentials.write_text("")

    @property
    def pid(self):
        return self.proc.pid

    @property
    def endpoint(self):
        return f"http://127.0.0.1:{self.port}"

    # -- starting and stopping -------------------------------------------
    def _spawn(self, argv, env):
        log = open(self.log_path, "wb")
        try:
            self.proc = subprocess.Popen(argv, cwd=str(self.workdir), env=env, stdin=subprocess.DEVNULL,
                                         stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                                         preexec_fn=_die_with_parent)
        finally:
            log.close()

    def log_tail(self, n=40):
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-n:])
        except OSError:
            return "(no log)"

    def _fail(self, why):
        self.stop()
        raise RuntimeError(f"{self.kind} on 127.0.0.1:{self.port}: {why}\n--- {self.log_path} ---\n"
                           f"{self.log_tail()}")

    def _wait_listening(self, deadline):
        """Until the server's own process listens on its S3 port."""
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                self._fail(f"exited with status {self.proc.returncode} while starting")
            if any(port == self.port and proto.startswith("tcp")
                   for _, port, proto in listening_sockets(self.pid)):
                return
            time.sleep(0.1)
        self._fail(f"not listening after {READY_TIMEOUT:.0f} s")

    def _wait_serving(self, deadline, client):
        """Until an authenticated ListBuckets answers."""
        from botocore.exceptions import BotoCoreError, ClientError
        last = None
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                self._fail(f"exited with status {self.proc.returncode} while starting")
            try:
                client.list_buckets()
                return
            except (BotoCoreError, ClientError) as e:
                last = e
            time.sleep(0.2)
        self._fail(f"S3 not answering after {READY_TIMEOUT:.0f} s: {last}")

    def stop(self):
        stop_process(self.proc)

    # -- using it ---------------------------------------------------------
    def client(self, access_key=None, secret=None, **config):
        """A boto3 S3 client for this server: path-style addressing, one
        attempt per call (a retry would hide what the server said), nothing
        read from ~/.aws. access_key/secret override the server's (to test
        a wrong one); config goes to botocore.config.Config."""
        import boto3
        import botocore.config
        import botocore.session
        core = botocore.session.Session()
        core.set_config_variable("config_file", str(self.aws_config))
        core.set_config_variable("credentials_file", str(self.aws_credentials))
        session = boto3.session.Session(botocore_session=core)
        settings = dict(s3={"addressing_style": "path"}, retries={"max_attempts": 1, "mode": "standard"},
                        signature_version="s3v4", connect_timeout=10, read_timeout=60)
        settings.update(config)
        return session.client("s3", endpoint_url=self.endpoint, region_name=self.region,
                              aws_access_key_id=access_key or self.access_key,
                              aws_secret_access_key=secret or self.secret,
                              config=botocore.config.Config(**settings))

    def bucket(self, name="t", versioned=False):
        """A new, empty bucket named after `name` (plus a counter: buckets
        outlive the test that made them, the server its whole session);
        versioning enabled when asked. Returns the bucket's name."""
        stem = re.sub(r"[^a-z0-9-]+", "-", name.lower()).strip("-")[:40] or "t"
        bucket = f"{stem}-{next(_bucket_serial):05d}-{secrets.token_hex(3)}"
        c = self.client()
        c.create_bucket(Bucket=bucket)
        if versioned:
            c.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})
            got = c.get_bucket_versioning(Bucket=bucket).get("Status")
            assert got == "Enabled", f"{self.kind}: versioning of {bucket} is {got!r} after enabling it"
        return bucket

    def env(self, base=None):
        """The variables a tether process needs to reach this server as AWS
        tools do. With base (an environment), a copy of it without any AWS_*
        variable of its own, plus these."""
        ours = {
            "AWS_ACCESS_KEY_ID": self.access_key,
            "AWS_SECRET_ACCESS_KEY": self.secret,
            "AWS_REGION": self.region,
            "AWS_DEFAULT_REGION": self.region,
            "AWS_ENDPOINT_URL_S3": self.endpoint,
            "AWS_ENDPOINT_URL": self.endpoint,
            "AWS_CONFIG_FILE": str(self.aws_config),
            "AWS_SHARED_CREDENTIALS_FILE": str(self.aws_credentials),
            # Never ask the EC2 instance metadata service (169.254.169.254).
            "AWS_EC2_METADATA_DISABLED": "true",
        }
        if base is None:
            return ours
        env = {k: v for k, v in base.items() if not k.startswith("AWS_")}
        env.update(ours)
        return env

    def __repr__(self):
        return f"<S3Server {self.kind} {self.endpoint} pid {self.proc.pid if self.proc else None}>"


def start_seaweedfs(srv, weed):
    """`weed mini` on 127.0.0.1, every port chosen free, every extra
    service it can do without off, one identity in an s3.json."""
    srv.access_key = "TETHER" + secrets.token_hex(7).upper()
    srv.secret = secrets.token_urlsafe(30)
    (srv.workdir / "s3.json").write_text(
        '{"identities": [{"name": "tether-tests", "credentials": [{"accessKey": "%s", "secretKey": "%s"}],'
        ' "actions": ["Admin", "Read", "Write", "List", "Tagging"]}]}\n' % (srv.access_key, srv.secret))
    data = srv.workdir / "data"
    data.mkdir()
    (master, master_grpc, volume, volume_grpc, filer, filer_grpc, s3, s3_grpc, admin,
     admin_grpc) = free_ports(10)
    srv.port = s3
    argv = [
        weed, f"-logdir={srv.workdir}", "mini", f"-dir={data}",
        "-ip=127.0.0.1", "-ip.bind=127.0.0.1",
        f"-master.port={master}", f"-master.port.grpc={master_grpc}", "-master.telemetry=false",
        f"-volume.port={volume}", f"-volume.port.grpc={volume_grpc}",
        f"-filer.port={filer}", f"-filer.port.grpc={filer_grpc}",
        f"-filer.localSocket={srv.workdir / 'filer.sock'}",
        f"-s3.port={s3}", f"-s3.port.grpc={s3_grpc}", "-s3.port.iceberg=0", "-s3.port.lance=0",
        f"-s3.localSocket={srv.workdir / 's3.sock'}",
        f"-s3.config={srv.workdir / 's3.json'}", "-s3.autoCreateBucket=false",
        f"-admin.port={admin}", f"-admin.port.grpc={admin_grpc}", "-admin.port.legacy=0",
        "-admin.ui=false", "-webdav=false",
        # Each bucket is a collection with a volume of its own, and mini
        # allows free disk / volume size of them (67 here): a session of
        # tests makes more buckets than that, and past it every PUT is a 500
        # ("failed to find writable volumes"). Small volumes, many allowed.
        "-master.volumeSizeLimitMB=64", "-volume.max=2000",
    ]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "S3_", "WEED_"))}
    env["HOME"] = str(srv.workdir)
    t0 = time.monotonic()
    srv._spawn(argv, env)
    deadline = t0 + READY_TIMEOUT
    srv._wait_listening(deadline)
    srv._wait_serving(deadline, srv.client())
    srv.started_in = time.monotonic() - t0


# The requests moto serves unauthenticated: the four IAM calls below.
MOTO_SETUP_CALLS = 4
ALLOW_ALL = '{"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}'


def start_moto(srv, moto):
    """moto's server on 127.0.0.1 that serves MOTO_SETUP_CALLS requests
    unauthenticated, which make an IAM user with an allow-all policy and an
    access key; every request after them must be signed with that key."""
    (srv.port,) = free_ports(1)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "MOTO_", "TEST_SERVER_MODE"))}
    env.update(INITIAL_NO_AUTH_ACTION_COUNT=str(MOTO_SETUP_CALLS), HOME=str(srv.workdir),
               AWS_CONFIG_FILE=str(srv.aws_config), AWS_SHARED_CREDENTIALS_FILE=str(srv.aws_credentials),
               AWS_EC2_METADATA_DISABLED="true")
    t0 = time.monotonic()
    srv._spawn([moto, "-H", "127.0.0.1", "-p", str(srv.port)], env)
    deadline = t0 + READY_TIMEOUT
    srv._wait_listening(deadline)

    # The set-up calls, signed with a key that does not exist yet (moto
    # does not look until the count is spent).
    import boto3
    import botocore.config
    import botocore.session
    core = botocore.session.Session()
    core.set_config_variable("config_file", str(srv.aws_config))
    core.set_config_variable("credentials_file", str(srv.aws_credentials))
    iam = boto3.session.Session(botocore_session=core).client(
        "iam", endpoint_url=srv.endpoint, region_name=srv.region, aws_access_key_id="SETUP",
        aws_secret_access_key="SETUP", config=botocore.config.Config(retries={"max_attempts": 1}))
    iam.create_user(UserName="tether-tests")
    arn = iam.create_policy(PolicyName="tether-tests-all", PolicyDocument=ALLOW_ALL)["Policy"]["Arn"]
    iam.attach_user_policy(UserName="tether-tests", PolicyArn=arn)
    key = iam.create_access_key(UserName="tether-tests")["AccessKey"]
    srv.access_key, srv.secret = key["AccessKeyId"], key["SecretAccessKey"]
    srv._wait_serving(deadline, srv.client())
    srv.started_in = time.monotonic() - t0


STARTERS = {"seaweedfs": (start_seaweedfs, weed_binary, "SeaweedFS's weed (run scripts/install-deps)"),
            "moto": (start_moto, moto_binary, "moto_server in the test venv (run scripts/install-deps)")}


def _session_server(kind, tmp_path_factory):
    """Start a server of this kind (a skip if it is not installed); yield
    it; stop it however the session ends, a failed start included."""
    start, find, what = STARTERS[kind]
    binary = find()
    if binary is None:
        pytest.skip(f"{what} is not installed")
    srv = S3Server(kind, tmp_path_factory.mktemp(kind))
    try:
        start(srv, binary)
        yield srv
    finally:
        srv.stop()


@pytest.fixture(scope="session")
def seaweedfs_server(tmp_path_factory):
    yield from _session_server("seaweedfs", tmp_path_factory)


@pytest.fixture(scope="session")
def moto_server(tmp_path_factory):
    yield from _session_server("moto", tmp_path_factory)


S3_SERVER_KINDS = ("seaweedfs", "moto")


@pytest.fixture(params=S3_SERVER_KINDS)
def s3_server(request):
    """Each S3 server in turn (started on first use, once per session)."""
    return request.getfixturevalue(f"{request.param}_server")
