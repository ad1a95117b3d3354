"""The red-team corpus of issue 31 on the CPU runner (no GPU; runs in CI): %%kernel cells that try to run
host code outside a launch, interpose the C library or the runtime, make system calls, flood the
output or forge the clock, each driven through a real client as a student would.

Every attack hides what NVRTC would refuse behind `#ifdef CUDALAB_CPU_RUNNER` (the host compiler's
macro) and aims its effect at something the test can see: a marker file in the site's markers'
directory, a victim process, the kernel's own log, the reported time. Each test asserts the outcome
the issue demands (refused at build with a CompileError that names what was found, or stopped by
the launch's sandbox with a KernelError) and then, through redteam.Attack, that no file was written
outside the student cache, no process was left behind, the kernel's log did not grow, and the next
cell works. Needs NVRTC (the gate) and g++ (the runner's compiler): without NVRTC the tests skip.
"""
from __future__ import annotations

import re
import subprocess

import pytest

from redteam import Attack, Site, assert_no_process_left, assert_refused, error_text, run_watched, start_in

# a busy loop of ~0.16 s on an idle 2-core development machine, in thread 0 only: long enough to watch the
# launch's processes and to tell a measured time from a forged one
SPIN_ITERATIONS = 60_000_000
# time-forging: a forged run must report at least this share of the honest twin's time
HONEST_SHARE = 0.5
# an honest spin of SPIN_MS, measured by the kernel's own clock64() (the runner's nanoseconds)
SPIN_MS = 200

KERNEL = """%%kernel --for vecadd --name NAME
#ifdef CUDALAB_CPU_RUNNER
HOST
#endif
__global__ void NAME(const float *A, const float *B, float *C, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) C[i] = A[i] + B[i];
#ifdef CUDALAB_CPU_RUNNER
    BODY
#endif
}
"""
SPIN_BODY = f"""if (i == 0) {{
        float x = A[0];
        for (int k = 0; k < {SPIN_ITERATIONS}; k++) x = x * 0.9999999f + 1e-7f;
        if (x == -1.0f) C[0] = x;
    }}"""

# host declarations the attacks use (the prelude includes neither <stdio.h> nor <stdlib.h>)
SYSTEM = 'extern "C" int system(const char *);'
FOPEN = 'extern "C" void *fopen(const char *, const char *); extern "C" int fclose(void *);'
SYSCALL = 'extern "C" long syscall(long, ...);'


def kernel(name: str, host: str = "", body: str = "") -> str:
    return KERNEL.replace("NAME", name).replace("HOST", host).replace("BODY", body)


def touch_with_fopen(path) -> str:
    return f'void *rt_f = fopen("{path}", "w"); if (rt_f) fclose(rt_f);'


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    """The student cache of this module's kernels: the correct kernel each test ends with is built once."""
    return tmp_path_factory.mktemp("redteam-cache")


@pytest.fixture
def site(tmp_path, cache) -> Site:
    return Site(tmp_path, cache)


@pytest.fixture
def pair(site, start_kernel, monkeypatch):
    return start_in(site, start_kernel, monkeypatch)


@pytest.fixture
def victim():
    """An unrelated process of the same user, which no attack may hurt."""
    p = subprocess.Popen(["sleep", "100"])
    yield p
    p.kill()
    p.wait(5)


def test_a_correct_kernel_leaves_nothing_behind(pair, site):
    """The baseline every attack is held to: the harness's own path writes nothing outside the cache,
    leaves no process and no log, and its launches run sandboxed."""
    with Attack(pair, site) as attack:
        c, text, watch = run_watched(pair, kernel("rt_baseline", body=SPIN_BODY))
        assert c["status"] == "ok", text
        assert watch.long_lived(0.1), f"no launch process seen running the kernel: {watch.seen}"
        assert not watch.unsandboxed(0.1), f"a launch ran without its sandbox: {watch.unsandboxed(0.1)}"
        assert attack.run("%vecadd --size 1000 --variant rt_baseline --reps 1 --warmup 0")[0]["status"] == "ok"


# ---------------------------------------------------------------- constructors of every kind

def section_entry(section: str, mark: str) -> str:
    return (f"{FOPEN} static void rt_pwn(void) {{ {touch_with_fopen(mark)} }} "
            f'__attribute__((section("{section}"), used)) static void (*rt_pwn_entry)(void) = rt_pwn;')


# id -> (host code writing the marker MARK, kernel-body code, words any of which the refusal names)
CONSTRUCTORS = {
    "attribute": (f'{SYSTEM} __attribute__((constructor)) static void rt_pwn(void) {{ system("touch MARK"); }}',
                  "", ("constructor",)),
    "attribute_priority": (f"{FOPEN} __attribute__((constructor(101))) static void rt_pwn(void) "
                           f"{{ {touch_with_fopen('MARK')} }}", "", ("constructor",)),
    "static_object": (f"{FOPEN} struct RtPwn {{ RtPwn() {{ {touch_with_fopen('MARK')} }} }}; static RtPwn rt_pwn;",
                      "", ("constructor", "static initialisation")),
    "init_array": (section_entry(".init_array", "MARK"), "", ("constructor", "static initialisation", ".init_array")),
    "ctors": (section_entry(".ctors", "MARK"), "", ("constructor", "static initialisation", ".ctors")),
    "preinit_array": (section_entry(".preinit_array", "MARK"), "",
                      ("constructor", "static initialisation", ".preinit_array")),
    "fini_array": (section_entry(".fini_array", "MARK"), "", ("destructor", ".fini_array")),
    "ifunc": (f'{FOPEN} static int rt_impl(void) {{ return 0; }} '
              f'extern "C" void *rt_resolve(void) {{ {touch_with_fopen("MARK")} return (void *)rt_impl; }} '
              f'extern "C" int rt_chosen(void) __attribute__((ifunc("rt_resolve")));',
              "if (i == 0 && rt_chosen()) C[0] = -1.0f;", ("ifunc", "indirect function")),
    "destructor": (f'{SYSTEM} __attribute__((destructor)) static void rt_pwn(void) {{ system("touch MARK"); }}',
                   "", ("destructor",)),
    "thread_local": (f"{FOPEN} static int rt_init(void) {{ {touch_with_fopen('MARK')} return 1; }} "
                     "thread_local int rt_tls = rt_init();",
                     "if (i == 0 && rt_tls == 2) C[0] = -1.0f;", ("thread-local", "thread_local")),
}


@pytest.mark.parametrize("kind", list(CONSTRUCTORS))
def test_constructor_is_refused_and_never_runs(pair, site, kind):
    host, body, names = CONSTRUCTORS[kind]
    mark = site.mark(kind)
    with Attack(pair, site) as attack:
        c, text, _ = attack.run(kernel(f"rt_{kind}", host.replace("MARK", str(mark)), body.replace("MARK", str(mark))))
        assert not mark.exists(), f"the {kind} ran host code: {mark} was written"
        assert_refused(c, *names)


def test_the_issues_constructor_seen_by_nvrtc_is_refused(pair, site):
    """The issue's own cell: no #ifdef, a __device__ constructor NVRTC accepts, calling system()."""
    mark = site.mark("issue")
    code = f"""%%kernel --for vecadd --name rt_evil3
extern "C" __device__ int system(const char *);
__device__ __attribute__((constructor)) void rt_pwn3(void) {{ system("id > {mark}"); }}
__global__ void rt_evil3(const float *A, const float *B, float *C, int n)
{{ int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) C[i] = A[i] + B[i]; }}
"""
    with Attack(pair, site) as attack:
        c, _, _ = attack.run(code)
        assert not mark.exists(), f"the constructor ran `id`: {mark.read_text()!r}"
        assert_refused(c, "constructor")


def test_a_daemon_started_by_a_constructor_does_not_outlive_the_cell(pair, site):
    """`(setsid sleep 30 &)` from a constructor outlived the kernel: refused, and nothing left running."""
    mark = site.mark("daemon")
    host = (f'{SYSTEM} __attribute__((constructor)) static void rt_pwn(void) '
            f'{{ system("(setsid sh -c \'sleep 2; touch {mark}; sleep 30\' >/dev/null 2>&1 &)"); }}')
    with Attack(pair, site) as attack:
        c, _, _ = attack.run(kernel("rt_daemon", host))
        assert_no_process_left(pair, site)
        assert not mark.exists(), f"the daemon outlived the cell and wrote {mark}"
        assert_refused(c, "constructor")


# ---------------------------------------------------------------- interposed C library and runtime symbols

# symbol -> its definition in the cell: each does what would switch a layer off or forge the time
INTERPOSED = {
    "clock_gettime": 'struct timespec; extern "C" int clock_gettime(int, struct timespec *ts) '
                     '{ ((long *)ts)[0] = 1; ((long *)ts)[1] = 0; return 0; }',
    "__cudalab_clock": 'extern "C" long long __cudalab_clock(void) { return 0; }',
    "syscall": 'extern "C" long syscall(long, ...) { return 0; }',
    "setrlimit": 'extern "C" int setrlimit(int, const void *) { return 0; }',
    "prctl": 'extern "C" int prctl(int, ...) { return 0; }',
    "seccomp": 'extern "C" int seccomp(unsigned, unsigned, void *) { return 0; }',
    "memcpy": 'extern "C" void *memcpy(void *d, const void *s, size_t n) noexcept '
              '{ for (size_t k = 0; k < n; k++) ((char *)d)[k] = ((const char *)s)[k]; return d; }',
    "printf": 'extern "C" int printf(const char *, ...) { return 0; }',
}


@pytest.mark.parametrize("symbol", list(INTERPOSED))
def test_interposed_symbol_is_refused_or_harmless(pair, site, symbol):
    """Refused at build naming the symbol, or provably harmless: every launch process ran under its
    sandbox (seccomp filter, no new privileges, a CPU-time limit) and the reported time is the time
    the same work takes without the interposition."""
    forged = f"rt_forged_{symbol}"
    with Attack(pair, site) as attack:
        c, text, watch = run_watched(pair, kernel(forged, INTERPOSED[symbol], SPIN_BODY))
        if c["status"] == "error":
            assert_refused(c, symbol)
            return
        assert watch.long_lived(0.1), f"no launch process seen running {forged}: {watch.seen}"
        assert not watch.unsandboxed(0.1), \
            f"with {symbol} defined in the cell, a launch ran without its sandbox: {watch.unsandboxed(0.1)}"
        c, text, _ = attack.run(kernel("rt_honest", body=SPIN_BODY))
        assert c["status"] == "ok", text
        c, text, doc = attack.run(f"%vecadd --size 1000 --variant rt_honest,{forged} --reps 2 --warmup 0")
        assert c["status"] == "ok", text
        ms = {r["variant"]: r["kernel_ms"]["median"] for r in doc["runs"]}
        assert ms[forged] >= HONEST_SHARE * ms["rt_honest"], \
            f"with {symbol} defined in the cell the same work reports {ms[forged]} ms against {ms['rt_honest']} ms"


# ---------------------------------------------------------------- host functions called from the body

# symbol -> (its declaration, the body's call; MARK is a marker path, VICTIM an unrelated process's pid)
HOST_CALLS = {
    "system": (SYSTEM, 'if (i == 0) system("touch MARK");'),
    "fopen": (FOPEN, f"if (i == 0) {{ {touch_with_fopen('MARK')} }}"),
    "open": ('extern "C" int open(const char *, int, ...);', 'if (i == 0) open("MARK", 0101, 0644);'),
    "socket": ('extern "C" int socket(int, int, int);', "if (i == 0 && socket(2, 1, 0) >= 0) C[0] = -1.0f;"),
    "execve": ('extern "C" int execve(const char *, char *const *, char *const *);',
               'if (i == 0) { char *argv[] = { (char *)"/bin/sh", (char *)"-c", (char *)"touch MARK", 0 }; '
               'execve("/bin/sh", argv, 0); }'),
    "fork": ('extern "C" int fork(void);', "if (i == 0 && fork() == 0) for (;;) ;"),
    "kill": ('extern "C" int kill(int, int);', "if (i == 0) kill(VICTIM, 9);"),
}


@pytest.mark.parametrize("symbol", list(HOST_CALLS))
def test_host_function_called_from_the_body_is_refused(pair, site, victim, symbol):
    decl, body = HOST_CALLS[symbol]
    mark = site.mark(symbol)
    body = body.replace("MARK", str(mark)).replace("VICTIM", str(victim.pid))
    with Attack(pair, site) as attack:
        c, _, _ = attack.run(kernel(f"rt_call_{symbol}", decl, body))
        assert not mark.exists(), f"{symbol}() from the kernel body wrote {mark}"
        assert victim.poll() is None, f"{symbol}() from the kernel body killed an unrelated process"
        assert_refused(c, symbol)


# ---------------------------------------------------------------- system calls from the body

# id -> the body's system calls through a declared syscall() (x86-64 numbers; MARK, VICTIM as above)
SYSCALLS = {
    # tgkill(tgid, tid, SIGKILL) of another process
    "tgkill": "if (i == 0) syscall(234, VICTIM, VICTIM, 9);",
    # newfstatat(AT_FDCWD, path, buf, 0): the kernel learns whether a host path exists
    "newfstatat": 'if (i == 0) { long st[32]; if (syscall(262, -100, "/etc/passwd", st, 0) == 0) C[0] = -1.0f; }',
    # write(2, ...): 1 MiB into the kernel's own log, 4 KiB at a time from 4 threads
    "write_stderr": "if (i < 4) { static char junk[4096]; for (int k = 0; k < 64; k++) syscall(1, 2, junk, 4096); }",
    # openat(AT_FDCWD, MARK, O_WRONLY | O_CREAT, 0644)
    "openat": 'if (i == 0) syscall(257, -100, "MARK", 0101, 0644);',
}


@pytest.mark.parametrize("call", list(SYSCALLS))
def test_system_call_from_the_body_is_refused_or_stopped(pair, site, victim, call):
    """A declared syscall() is refused at build; whatever slipped by is ended by the launch's filter
    with a KernelError naming the system call, before it has any effect."""
    mark = site.mark(call)
    body = SYSCALLS[call].replace("MARK", str(mark)).replace("VICTIM", str(victim.pid))
    with Attack(pair, site) as attack:
        c, text, _ = attack.run(kernel(f"rt_syscall_{call}", SYSCALL, body))
        assert victim.poll() is None, "a system call from the kernel body killed an unrelated process"
        assert not mark.exists(), f"a system call from the kernel body created {mark}"
        assert c["status"] == "error", f"the kernel's system calls ({call}) ran and its cell passed: {text[:800]}"
        if c["ename"] == "CompileError":
            assert_refused(c, "syscall")
        else:
            assert c["ename"] == "KernelError" and "system call" in c["evalue"], f"{c['ename']}: {error_text(c)[:800]}"


# ---------------------------------------------------------------- output floods

# the most a flooding cell may show: a cap, whatever its exact size, well under what the kernel printed
OUTPUT_BOUND = 1 << 20


def test_device_printf_flood_is_capped(pair, site):
    """Every thread of the quick check (100003 of them) prints 2 lines of 64 bytes: 13 MB. The cell
    shows a bounded part of it and says that the rest was cut (truncated, dropped, not shown); the kernel's own log gets none of it."""
    code = """%%kernel --for vecadd --name rt_flood
__global__ void rt_flood(const float *A, const float *B, float *C, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    for (int k = 0; k < 2; k++) printf("flood from thread %8d, line %d: xxxxxxxxxxxxxxxxxxxxxxx\\n", i, k);
    if (i < n) C[i] = A[i] + B[i];
}
"""
    with Attack(pair, site) as attack:
        c, text, _ = attack.run(code, timeout=180)
        assert len(text.encode()) <= OUTPUT_BOUND, f"the cell showed {len(text.encode())} bytes of output"
        assert "flood from thread" in text, "the device printf output was lost rather than capped"
        assert re.search(r"truncated|dropped|not shown", text), f"the cell does not say its output was cut: {text[-400:]!r}"


# ---------------------------------------------------------------- the clock

@pytest.mark.serial    # a spin's measured time bounded: run alone (conftest.py)
def test_a_spin_of_200_ms_reports_about_200_ms(pair, site):
    """The harness measures the launch: a kernel that spins for SPIN_MS by its own clock64() reports
    about that, not less (nothing the kernel reads changes the time) and not much more."""
    body = f"if (i == 0) {{ long long t0 = clock64(); while (clock64() - t0 < {SPIN_MS}LL * 1000000) ; }}"
    with Attack(pair, site) as attack:
        c, text, _ = attack.run(kernel("rt_spin", body=body))
        assert c["status"] == "ok", text
        c, text, doc = attack.run("%vecadd --size 1000 --variant rt_spin --reps 2 --warmup 0")
        assert c["status"] == "ok", text
        ms = doc["runs"][0]["kernel_ms"]
        assert SPIN_MS * 0.95 <= ms["min"] and ms["median"] <= SPIN_MS * 3, ms



# ---------------------------------------------------------------- the kept copy bandwidth

def test_a_launch_cannot_forge_the_kept_copy_bandwidth(pair, site):
    """The CPU backend keeps the host's copy bandwidth in the cache folder (cpu/bandwidth.c), which every
    "% of bandwidth" of a later kernel reads: a student's launch that opens it for writing (truncating it,
    to force a figure of its own) finds it closed, and the kept line is the same afterwards."""
    kept = site.cache / "xdg" / "cudalab" / "host" / "copy-bandwidth"
    with Attack(pair, site) as attack:
        assert attack.run("%reduce --size 100000 --variant convergent --reps 2")[0]["status"] == "ok"
        before = kept.read_text()
        c, text, _ = attack.run(kernel("rt_forge_bw", host=FOPEN, body=f"if (i == 0) {{ {touch_with_fopen(kept)} }}"))
        if c["status"] == "ok":
            attack.run("%vecadd --size 1000 --variant rt_forge_bw --reps 1 --warmup 0")
        assert kept.read_text() == before, "a launch rewrote the kept copy bandwidth"
