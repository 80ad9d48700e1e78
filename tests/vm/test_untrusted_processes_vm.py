"""A node's own users steer nothing root does or measures: real processes on the cgroup v2 guest (issue 35, item 7).

tests/integration/test_untrusted_processes.py does this on this machine, where no cgroup may be created and pid 1 is
not the node's systemd. On the guest (Debian's kernel, cgroup v2, systemd as PID 1, the stand-in kubelet in
kubelet.service) the unit rule of _node/_kubelet_process (where systemd runs the node, a kubelet lives in a kubelet
unit's cgroup) is exercised for real, and groups named with bytes that are not UTF-8 are made for real. One script on
the guest (DRIVER) starts the processes, runs the facts module's own code (``_gather.gather``, as
tests/vm/test_facts_vm.py does) at five moments and prints what the tests below check:

* ``alone``: kubelet.service stopped. A uid-65534 process started with ``exec -a /home/u/bin/kubelet`` (a script of
  the user's that leaves a marker when anyone runs it) and two root processes running a root-owned ``kubelet``
  program (which leaves another marker when asked ``--version``) outside kubelet.service: one in a transient system
  unit of its own (systemd-run), one in a group ``kubelet.service`` under a user's ``user@65534.service`` subtree.
* ``beside``: kubelet.service started again, so the real kubelet has a higher pid than all three.
* ``hog``: a uid-65534 ``python3 /home/u/ansible-tmp-1/hog.py`` holding 64 MiB added.
* ``hog_gone``: the hog killed again, so that the non-pod figure with it is compared with the readings on both sides.
* ``odd_groups``: a root process named containerd in ``system.slice/bad\\xff.scope`` and a uid-65534 one in
  ``user@65534.service/app-\\xff\\xfe.scope`` added.

The user's processes live where a login would put them (a session scope under ``user-65534.slice``, made by hand:
nobody has no login here). Each stage's failure is kept (``error``), so each test fails on its own. The guest is put
back as it was (every process killed, every group removed, kubelet.service running and healthy). About 40 s on the
guest, with the two facts guests' boot (tests/nodes/fleets.py GUESTS) when run alone.
"""

from __future__ import annotations

import json

import pytest

from nodes import vmnodes

MIB = 1024 * 1024
NOBODY = 65534
# The user's files, and the root-owned impostor (a directory of root's alone, under /opt: root 0755 on Debian, where
# /usr/local may be group-writable by staff on older installs and would be refused for that instead).
PATHS = {
    'home': '/home/u',
    'users_program': '/home/u/bin/kubelet',
    'users_config': '/home/u/config.yaml',
    'users_marker': '/home/u/kubelet-ran',
    'hog': '/home/u/ansible-tmp-1/hog.py',
    'hog_ready': '/home/u/ansible-tmp-1/ready',
    'impostor_dir': '/opt/nodealloc-impostor',
    'impostor': '/opt/nodealloc-impostor/kubelet',
    'impostor_marker': '/run/nodealloc-impostor-ran',
    'state': '/run/nodealloc-untrusted.json',
    'impostor_unit': 'nodealloc-impostor.service',
    'session': 'user.slice/user-65534.slice/session-nodealloc.scope',
    'users_kubelet_service': 'user.slice/user-65534.slice/user@65534.service/kubelet.service',
}
NODES_CONFIG = '/var/lib/kubelet/config.yaml'  # the stand-in's --config (vmnodes.KUBELET_UNIT)

DRIVER = r'''
import json, os, subprocess, sys, time, traceback, urllib.request
sys.path.insert(0, "/opt/nodealloc")
from ansible_collections.nodealloc.kubelet.plugins.module_utils import _gather, _option_specs

P = PATHS_JSON
NOBODY = 65534
SLEEPER = "import time; time.sleep(100000)"
CGROUP = b"/sys/fs/cgroup/"
# Bytes that are not UTF-8 in a group's name: any byte but "/" and NUL is allowed (kernel/cgroup/cgroup.c).
ROOTS_ODD_GROUP = b"system.slice/bad\xff.scope"
USERS_ODD_GROUP = b"user.slice/user-65534.slice/user@65534.service/app-\xff\xfe.scope"
# What the cleanup undoes: [pid, argv[0]] of each process started here (this one's too: killed if an ssh timeout left
# it running), the units, the groups made.
state = {"pids": [[os.getpid(), sys.executable]], "units": [], "groups": []}


def save():
    with open(P["state"], "w") as handle:
        json.dump(state, handle)  # names of any byte as surrogates, escaped: the cleanup gets them back


def write(path, text, mode, owner=0):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as handle:
        handle.write(text)
    os.chmod(path, mode)
    os.chown(path, owner, owner)


def group(relative):
    """/sys/fs/cgroup/<relative> (bytes), each level made here recorded for the cleanup."""
    path = CGROUP.rstrip(b"/")
    for part in relative.split(b"/"):
        path += b"/" + part
        if not os.path.isdir(path):
            os.mkdir(path)
            state["groups"].append(os.fsdecode(path))
            save()
    return path


def argv0_of(pid):
    with open("/proc/%d/cmdline" % pid, "rb") as handle:
        return handle.read().split(b"\0")[0]


def wait_for(check, what, seconds=120):
    deadline = time.monotonic() + seconds
    while not check():
        if time.monotonic() > deadline:
            raise SystemExit("%s did not happen within %d s" % (what, seconds))
        time.sleep(0.1)


def start(argv, where, user=None, argv0=None):
    """Start argv (as ``exec -a argv0`` where given) as ``user``, move it into the group ``where``; its pid once its
    command line is the one exec'd."""
    if argv0:
        argv = ["/bin/bash", "-c", 'exec -a "$0" "$@"', argv0] + argv
    ids = {"user": user, "group": user, "extra_groups": []} if user else {}
    process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               cwd="/", start_new_session=True, **ids)
    wanted = os.fsencode(argv0 or argv[0])
    state["pids"].append([process.pid, os.fsdecode(wanted)])
    save()
    with open(group(where) + b"/cgroup.procs", "w") as handle:
        handle.write(str(process.pid))
    wait_for(lambda: argv0_of(process.pid) == wanted, "pid %d exec'ing %r" % (process.pid, wanted))
    return process.pid


def main_pid(unit):
    return int(subprocess.run(["systemctl", "show", "-p", "MainPID", "--value", unit], check=True,
                              stdout=subprocess.PIPE, universal_newlines=True).stdout)


def healthy():
    try:
        return urllib.request.urlopen("http://127.0.0.1:10248/healthz", timeout=5).read() == b"ok"
    except Exception:  # refused, reset, a half-started server's bad status line
        return False


def marker(path):
    try:
        with open(path) as handle:
            return handle.read().strip()
    except OSError:
        return None


def facts():
    """The facts module's code, its parameters as AnsibleModule fills them, after the markers of earlier stages are
    removed; a failure kept, not raised (each stage, and each test, stands on its own on older code too)."""
    for path in (P["users_marker"], P["impostor_marker"]):
        if os.path.exists(path):
            os.unlink(path)
    # The module's argument spec as _module_glue builds it (which imports ansible, not on the guest).
    options = {name: spec.get("default") for name, spec in _option_specs.argument_spec(_option_specs.FACTS).items()}
    options.update(sample_seconds=0, history=False, _check_mode=True)
    try:
        result = _gather.gather(options)
        kubelet = result["kubelet"]
        return {
            "error": None,
            "kubelet": {key: kubelet.get(key) for key in ("pid", "argv", "config_path", "config_found_by", "unit")},
            "version_command": kubelet["version"]["command"],
            "components": result["components"],
            "component_cgroups": sorted(c["cgroup"] for c in result["memory"]["kube_components"]["cgroups"]),
            "non_pod_bytes": result["memory"]["non_pod_bytes"],
            "tool_pids": [p["pid"] for p in result["memory"]["measurement_tool"]["processes"]],
            "not_found": result["not_found"],
            "markers": markers(),
        }
    except Exception:
        return {"error": traceback.format_exc(), "markers": markers()}


def markers():
    return {"users": marker(P["users_marker"]), "impostor": marker(P["impostor_marker"])}


out = {"pids": {}, "stages": {}}
save()
# The user's home: their own "kubelet" (a script leaving a marker whenever anyone runs it) and its config.
write(P["users_program"], "#!/bin/sh\nid -u > %s\necho 'Kubernetes v1.31.0'\n" % P["users_marker"], 0o755, NOBODY)
write(P["users_config"], "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"
      "kubeReserved: {memory: 5Gi}\n", 0o644, NOBODY)
write(P["hog"], 'import time\nheld = b"\\x01" * (64 << 20)\nopen(%r, "w").close()\ntime.sleep(100000)\n'
      % P["hog_ready"], 0o644, NOBODY)
for directory in (P["home"], os.path.dirname(P["users_program"]), os.path.dirname(P["hog"])):
    os.chmod(directory, 0o755)
    os.chown(directory, NOBODY, NOBODY)
# Root's program, in a directory of root's alone: only the unit it runs in tells it from the kubelet.
os.makedirs(P["impostor_dir"], mode=0o755, exist_ok=True)
write(P["impostor"], "#!/usr/bin/python3\nimport os, sys, time\nif '--version' in sys.argv:\n"
      "    open(%r, 'w').write(str(os.getuid()))\n    print('Kubernetes v1.31.0')\nelse:\n"
      "    time.sleep(100000)\n" % P["impostor_marker"], 0o755)

# Lowest pids first: the user's kubelet, then root's two outside kubelet.service.
pids = out["pids"]
pids["users_kubelet"] = start(["/usr/bin/python3", "-c", SLEEPER, "--config=" + P["users_config"]],
                              P["session"].encode(), NOBODY, P["users_program"])
state["units"].append(P["impostor_unit"])
save()
subprocess.run(["systemd-run", "--quiet", "--unit=" + P["impostor_unit"], "--", "/usr/bin/python3", P["impostor"],
                "--config=" + P["users_config"]], check=True)
pids["impostor_unit"] = main_pid(P["impostor_unit"])
wait_for(lambda: argv0_of(pids["impostor_unit"]) == b"/usr/bin/python3", "the impostor unit's start")
pids["impostor_user_tree"] = start(["/usr/bin/python3", P["impostor"], "--config=" + P["users_config"]],
                                   P["users_kubelet_service"].encode())
# Root's impostors run a program only root can change (its interpreter, the script and every directory above them:
# owner and mode, read here without the code under test): the unit is all that refuses them.
out["impostor_files"] = {}
for start_path in (os.readlink("/proc/%d/exe" % pids["impostor_unit"]), P["impostor"]):
    path = start_path
    while True:
        info = os.stat(path)
        out["impostor_files"][path] = [info.st_uid, info.st_mode & 0o7777]
        if path == "/":
            break
        path = os.path.dirname(path)

subprocess.run(["systemctl", "stop", "kubelet.service"], check=True)
out["stages"]["alone"] = facts()

subprocess.run(["systemctl", "start", "kubelet.service"], check=True)
wait_for(healthy, "kubelet.service healthy", 300)
pids["kubelet"], pids["containerd"] = main_pid("kubelet.service"), main_pid("containerd.service")
with open("/proc/%d/cmdline" % pids["kubelet"], "rb") as handle:
    out["kubelet_argv"] = [os.fsdecode(a) for a in handle.read().rstrip(b"\0").split(b"\0")]
out["kubelet_exe"] = os.readlink("/proc/%d/exe" % pids["kubelet"])
out["stages"]["beside"] = facts()

pids["hog"] = start(["/usr/bin/python3", P["hog"]], P["session"].encode(), NOBODY)
wait_for(lambda: os.path.exists(P["hog_ready"]), "the hog's 64 MiB")
out["stages"]["hog"] = facts()
with open("/proc/%d/status" % pids["hog"]) as handle:
    out["hog_rss_anon_bytes"] = next(int(line.split()[1]) * 1024 for line in handle if line.startswith("RssAnon:"))
# The same reading with the hog gone (its memory is freed when it exits, before it is reaped): the readings on either
# side of the hog's bracket whatever the guest itself did meanwhile (the kubelet started seconds before).
os.kill(pids["hog"], 9)
try:
    os.waitpid(pids["hog"], 0)
except ChildProcessError:  # reaped already by subprocess's own clean-up
    pass
out["stages"]["hog_gone"] = facts()

pids["roots_odd_runtime"] = start(["/usr/bin/python3", "-c", SLEEPER], ROOTS_ODD_GROUP, None, "/usr/bin/containerd")
pids["users_odd_runtime"] = start(["/usr/bin/python3", "-c", SLEEPER], USERS_ODD_GROUP, NOBODY, "containerd")
out["odd_cgroup_files"] = {}
for name in ("roots_odd_runtime", "users_odd_runtime"):
    with open("/proc/%d/cgroup" % pids[name], "rb") as handle:
        out["odd_cgroup_files"][name] = handle.read().decode("latin-1")  # the kernel's bytes, one char each
out["stages"]["odd_groups"] = facts()
print(json.dumps(out, default=str))
'''

CLEANUP = r'''
import json, os, shutil, signal, subprocess, time, urllib.request
P = PATHS_JSON
try:
    with open(P["state"]) as handle:
        state = json.load(handle)
except (OSError, ValueError):
    state = {"pids": [], "units": [], "groups": []}
for pid, argv0 in state["pids"]:
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as handle:
            running = handle.read().split(b"\0")[0]
        # Only what was started (a pid is not reused within seconds; checked all the same), or its bash before exec.
        if running in (os.fsencode(argv0), b"/bin/bash", b"python3"):
            os.kill(pid, signal.SIGKILL)
    except (FileNotFoundError, ProcessLookupError):
        pass
for unit in state["units"]:
    subprocess.run(["systemctl", "stop", unit], stderr=subprocess.DEVNULL)
    subprocess.run(["systemctl", "reset-failed", unit], stderr=subprocess.DEVNULL)
deadline = time.monotonic() + 30
for path in reversed(state["groups"]):  # deepest first; a killed process leaves its group as it exits
    while True:
        try:
            os.rmdir(os.fsencode(path))
            break
        except FileNotFoundError:
            break
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)
for path in (P["home"], P["impostor_dir"]):
    shutil.rmtree(path, ignore_errors=True)
for path in (P["impostor_marker"], P["state"]):
    if os.path.exists(path):
        os.unlink(path)
subprocess.run(["systemctl", "start", "kubelet.service"], check=True)
deadline = time.monotonic() + 300
while True:
    try:
        if urllib.request.urlopen("http://127.0.0.1:10248/healthz", timeout=5).read() == b"ok":
            break
    except Exception:
        pass
    if time.monotonic() > deadline:
        raise SystemExit("kubelet.service not healthy again")
    time.sleep(0.5)
'''


def _script(text):
    return "python3 - <<'EOF'\n%s\nEOF" % text.replace('PATHS_JSON', json.dumps(PATHS))


@pytest.fixture(scope='module')
def guest_run(vm_guests):
    """The driver's answer on the cgroup v2 facts guest; the guest put back afterwards."""
    node = vm_guests['facts-v2']
    state_dir = node['state_dir']
    vmnodes.push_module_utils(node, state_dir)
    try:
        done = vmnodes.ssh(node, state_dir, _script(DRIVER), check=False, timeout=900)
        assert done.returncode == 0, 'the driver failed on the guest:\n%s\n%s' % (
            done.stdout[-4000:], done.stderr[-4000:])
        yield json.loads(done.stdout.strip().splitlines()[-1])
    finally:
        cleaned = vmnodes.ssh(node, state_dir, _script(CLEANUP), check=False, timeout=600)
        assert cleaned.returncode == 0, 'the guest was not put back:\n%s' % cleaned.stderr[-4000:]


def _stage(run, name):
    stage = run['stages'][name]
    assert stage['error'] is None, 'the facts failed (stage %s):\n%s' % (name, stage['error'])
    return stage


def _no_candidate_ran(stage):
    """Neither the user's program nor root's impostor ran in this stage (each leaves a marker when run, root's when
    asked --version; the module ran its version probe in every stage)."""
    assert stage['markers'] == {'users': None, 'impostor': None}, (
        'a candidate\'s program ran (a marker holds the uid it ran as): %r' % stage['markers'])


def _ignored(stage, program, pid):
    """The one not_found line saying the process ``pid`` named ``program`` was ignored."""
    lines = [line for line in stage['not_found']
             if line.startswith('ignored a process named %s: pid %d (' % (program, pid))]
    assert len(lines) == 1, stage['not_found']
    return lines[0]


def _kubelet_impostors_ignored(run, stage):
    pids = run['pids']
    users = _ignored(stage, 'kubelet', pids['users_kubelet'])
    assert users.startswith('ignored a process named kubelet: pid %d (%s ' % (
        pids['users_kubelet'], PATHS['users_program']))
    assert users.endswith('), uid %d' % NOBODY), users
    # Root's, with a program only root can change (interpreter, script, every directory above them: root's, written
    # by nobody else): refused for their cgroup alone (the unit rule).
    files = run['impostor_files']
    assert '/opt/nodealloc-impostor/kubelet' in files and len(files) >= 6, files
    assert all(uid == 0 and not mode & 0o022 for uid, mode in files.values()), files
    unit = _ignored(stage, 'kubelet', pids['impostor_unit'])
    assert '), runs in cgroup /system.slice/%s, not in the unit of ' % PATHS['impostor_unit'] in unit, unit
    user_tree = _ignored(stage, 'kubelet', pids['impostor_user_tree'])
    assert '), runs in cgroup /%s, not in the unit of ' % PATHS['users_kubelet_service'] in user_tree, user_tree


def test_a_users_kubelet_and_roots_outside_the_kubelet_unit_alone_are_ignored_and_never_run(guest_run):
    stage = _stage(guest_run, 'alone')
    _no_candidate_ran(stage)
    _kubelet_impostors_ignored(guest_run, stage)
    assert stage['kubelet']['pid'] is None
    assert any(line.startswith('no running kubelet process') for line in stage['not_found']), stage['not_found']
    # The node's own config file and the kubelet binary on the PATH (root's), not a candidate's.
    assert (stage['kubelet']['config_path'], stage['kubelet']['config_found_by']) == (
        NODES_CONFIG, 'kubelet_config_path option')
    # (The stand-in has no #! line: run so it fails, ENOEXEC, named in not_found; what counts is what was run.)
    assert stage['version_command'] == ['/usr/bin/kubelet', '--version']
    assert [c['program'] for c in stage['components']] == ['containerd']


def test_with_lower_pids_than_the_real_kubelet_they_are_ignored_and_the_real_one_is_asked(guest_run):
    stage = _stage(guest_run, 'beside')
    _no_candidate_ran(stage)
    pids = guest_run['pids']
    # Started in this order, so the real kubelet, restarted last, has the highest pid (unless the guest's pids wrapped
    # at pid_max in between: then run again).
    assert pids['users_kubelet'] < pids['impostor_unit'] < pids['impostor_user_tree'] < pids['kubelet'], pids
    _kubelet_impostors_ignored(guest_run, stage)
    assert stage['kubelet'] == {'pid': pids['kubelet'], 'argv': guest_run['kubelet_argv'],
                                'config_path': NODES_CONFIG, 'config_found_by': 'running kubelet command line',
                                'unit': 'kubelet.service'}
    # The verified executable (/proc/<pid>/exe) with the stand-in's script, never argv[0].
    assert stage['version_command'] == [guest_run['kubelet_exe'], '/usr/bin/kubelet', '--version']
    assert sorted((c['pid'], c['program']) for c in stage['components']) == sorted(
        [(pids['kubelet'], 'kubelet'), (pids['containerd'], 'containerd')])
    assert stage['component_cgroups'] == ['/system.slice/containerd.service', '/system.slice/kubelet.service']


def test_a_users_program_under_an_ansible_tmp_path_stays_counted(guest_run):
    before, with_hog, after = (_stage(guest_run, name) for name in ('beside', 'hog', 'hog_gone'))
    hog = guest_run['pids']['hog']
    assert guest_run['hog_rss_anon_bytes'] >= 64 * MIB  # it holds what it says (the kernel's figure)
    assert hog not in with_hog['tool_pids']
    # Its 64 MiB (and its interpreter) in the non-pod figure, against the mean of the readings just before and just
    # after it: the guest's own drift (ci of stop 55: -19 MiB in the seconds after the kubelet's restart, against the
    # reading before alone) is taken out as far as it is steady, the 16 MiB given away are for the rest.
    grew = with_hog['non_pod_bytes'] - (before['non_pod_bytes'] + after['non_pod_bytes']) / 2
    assert grew >= 48 * MIB, (
        'non-pod memory grew by %.1f MiB with a 64 MiB program of a user\'s (RssAnon %.1f MiB; readings before, with '
        'and after it: %s MiB)' % (grew / MIB, guest_run['hog_rss_anon_bytes'] / MIB, ', '.join(
            '%.1f' % (stage['non_pod_bytes'] / MIB) for stage in (before, with_hog, after))))


def test_runtimes_in_groups_named_with_any_bytes_change_nothing_but_the_reading(guest_run):
    before, stage = _stage(guest_run, 'hog_gone'), _stage(guest_run, 'odd_groups')
    pids = guest_run['pids']
    # The kernel shows the groups with those very bytes.
    files = guest_run['odd_cgroup_files']
    assert '0::/system.slice/bad\xff.scope\n' in files['roots_odd_runtime'], files
    assert '0::/user.slice/user-65534.slice/user@65534.service/app-\xff\xfe.scope\n' in files['users_odd_runtime']
    # Root's, outside the runtime's unit: refused for its group, the group named as a message can show it.
    roots = _ignored(stage, 'containerd', pids['roots_odd_runtime'])
    assert '), runs in cgroup /system.slice/bad\\xff.scope, not in the unit of ' in roots, roots
    assert roots.isascii(), roots
    users = _ignored(stage, 'containerd', pids['users_odd_runtime'])
    assert users.endswith('), uid %d' % NOBODY), users
    # Everything else as in the reading before them.
    assert stage['kubelet'] == before['kubelet']
    assert stage['components'] == before['components']
    assert stage['component_cgroups'] == before['component_cgroups']
    assert sorted(stage['not_found']) == sorted(before['not_found'] + [roots, users])
