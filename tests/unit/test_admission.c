/* test_admission.c — admission's trust in what it finds (kernel/exec/admission.c), without a kernel:
 * the directory's owner and mode, links named like its files, the capacity file's writer, forged
 * tickets, and the bound on a wait for a turn. Each case gets a fresh directory under /tmp;
 * another user's files are made by chown, so those cases run as root only (CI's and this machine's). */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "base/clock.h"
#include "exec/admission.h"

#define OTHER_UID 65534

static const admission_gpu cpu = { "cpu", 0 }, fake = { "fake0", 0 };
static char dir[64], victim[96];

static int fresh(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/cudalab-test-admission-XXXXXX");
    assert_non_null(mkdtemp(dir));
    snprintf(victim, sizeof victim, "%s.victim", dir);
    setenv("CUDALAB_ADMISSION_DIR", dir, 1);
    unsetenv("CUDALAB_GPU_CONTEXTS");
    return 0;
}

static int removed(void **state)
{
    (void)state;
    char cmd[200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s' '%s'", dir, victim);
    return system(cmd) == 0 ? 0 : -1;
}

static void root_only(void)
{
    if (geteuid() != 0)
        skip();
}

static void in_dir(char *buf, size_t len, const char *name)
{
    snprintf(buf, len, "%s/%s", dir, name);
}

/* A file holding text, with mode m, of uid. */
static void file(const char *path, const char *text, mode_t m, uid_t uid)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, m);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    assert_int_equal(fchmod(fd, m), 0);
    assert_int_equal(fchown(fd, uid, uid), 0);
    close(fd);
}

static int take_turn(double limit_ms, double *waited, error_info *err)
{
    memset(err, 0, sizeof *err);
    int rc = admission_turn(&cpu, true, limit_ms, waited, NULL, NULL, err);
    if (rc == 0)
        admission_turn(&cpu, false, 0, NULL, NULL, NULL, err);
    return rc;
}

static void another_users_directory_is_refused_by_name(void **state)
{
    (void)state;
    root_only();
    assert_int_equal(chown(dir, OTHER_UID, OTHER_UID), 0);
    double waited;
    error_info err;
    assert_int_equal(take_turn(1000, &waited, &err), -1);
    assert_string_equal(err.ename, "AdmissionError");
    assert_non_null(strstr(err.evalue, dir));
    assert_non_null(strstr(err.evalue, "belongs to uid 65534 with mode 0700"));
    int which;
    char why[512];
    assert_int_equal(admission_take(&fake, 1, &which, why, sizeof why), -1);
    assert_non_null(strstr(why, dir));
    char path[128];
    in_dir(path, sizeof path, "cpu.turn");
    assert_int_equal(access(path, F_OK), -1);   /* nothing made in it */
}

static void a_group_writable_directory_is_refused_and_roots_sticky_one_used(void **state)
{
    (void)state;
    assert_int_equal(chmod(dir, 0770), 0);
    double waited;
    error_info err;
    assert_int_equal(take_turn(1000, &waited, &err), -1);
    assert_non_null(strstr(err.evalue, "with mode 0770"));
    if (geteuid() != 0)
        return;
    assert_int_equal(chmod(dir, 01777), 0);     /* root's, shared */
    assert_int_equal(take_turn(1000, &waited, &err), 0);
    char path[128];
    struct stat st;
    in_dir(path, sizeof path, "cpu.turn");
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0644); /* the other users lock it too */
}

static void a_symlinked_turn_file_leaves_its_target_alone(void **state)
{
    (void)state;
    char path[128];
    file(victim, "secret\n", 0600, geteuid());
    in_dir(path, sizeof path, "cpu.turn");
    assert_int_equal(symlink(victim, path), 0);
    double waited;
    error_info err;
    assert_int_equal(take_turn(1000, &waited, &err), -1);
    assert_string_equal(err.ename, "AdmissionError");
    assert_non_null(strstr(err.evalue, "symbolic link"));
    struct stat st;
    assert_int_equal(stat(victim, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0600);
    /* a slot named so is one slot fewer, nothing more */
    in_dir(path, sizeof path, "fake0.slot0");
    assert_int_equal(symlink(victim, path), 0);
    setenv("CUDALAB_GPU_CONTEXTS", "2", 1);
    int which;
    char why[512];
    assert_int_equal(admission_take(&fake, 1, &which, why, sizeof why), 0);
    admission_census c;
    assert_int_equal(admission_count(&fake, &c), 0);
    assert_int_equal(c.held, 2);
    assert_true(c.mine);
    admission_release();
    assert_int_equal(stat(victim, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0600);
}

static int slots_said(void)
{
    admission_census c;
    assert_int_equal(admission_count(&fake, &c), 0);
    return c.slots;
}

static void capacity_counts_only_from_the_directory_owner(void **state)
{
    (void)state;
    char path[128];
    in_dir(path, sizeof path, "fake0.capacity");
    file(path, "3\n", 0644, geteuid());
    assert_int_equal(slots_said(), 3);
    assert_int_equal(chmod(path, 0666), 0);
    assert_int_equal(slots_said(), ADMISSION_DEFAULT_SLOTS);
    file(path, "99999\n", 0644, geteuid());
    assert_int_equal(slots_said(), ADMISSION_MAX_SLOTS);
    if (geteuid() != 0)
        return;
    assert_int_equal(chown(path, OTHER_UID, OTHER_UID), 0);
    assert_int_equal(slots_said(), ADMISSION_DEFAULT_SLOTS);
}

/* A ticket at the front of the turn queue, held locked by this process; its descriptor. */
static int forged_ticket(unsigned uid, int pid, uid_t owner)
{
    static unsigned salt;
    struct stat ns;
    char name[200], path[300];
    unsigned long pidns = stat("/proc/self/ns/pid", &ns) == 0 ? (unsigned long)ns.st_ino : 0;
    snprintf(name, sizeof name, "cpu.t.%016x.%016x.%u.%lu.%d.%08x", 0, 0, uid, pidns, pid, ++salt);
    in_dir(path, sizeof path, name);
    int fd = open(path, O_RDONLY | O_CREAT | O_EXCL, 0644);
    assert_true(fd >= 0);
    assert_int_equal(fchown(fd, owner, owner), 0);
    assert_int_equal(flock(fd, LOCK_EX), 0);
    return fd;
}

static int dead_pid(void)
{
    pid_t p = fork();
    if (p == 0)
        _exit(0);
    waitpid(p, NULL, 0);
    return (int)p;
}

static void forged_tickets_are_ignored_and_a_live_one_is_waited_for_within_the_bound(void **state)
{
    (void)state;
    admission_census c;
    int dead = forged_ticket(geteuid(), dead_pid(), geteuid());
    assert_int_equal(admission_count(&cpu, &c), 0);
    assert_int_equal(c.waiting_turn, 0);
    double waited;
    error_info err;
    assert_int_equal(take_turn(5000, &waited, &err), 0);
    assert_true(waited < 200);
    if (geteuid() == 0) {
        int foreign = forged_ticket(geteuid(), (int)getpid(), OTHER_UID);
        assert_int_equal(admission_count(&cpu, &c), 0);
        assert_int_equal(c.waiting_turn, 0);
        close(foreign);
    }
    /* a plausible one (this user's, a live process, locked) is waited for, and the wait ends */
    int live = forged_ticket(geteuid(), (int)getpid(), geteuid());
    assert_int_equal(admission_count(&cpu, &c), 0);
    assert_int_equal(c.waiting_turn, 1);
    double t0 = monotonic_ms();
    assert_int_equal(take_turn(300, &waited, &err), -1);
    assert_string_equal(err.ename, "GPUBusyError");
    assert_non_null(strstr(err.evalue, "waited 0.3 s for other kernels' timed runs on the CPU (1 ahead)"));
    assert_non_null(strstr(err.evalue, ADMISSION_WAIT_ENV));
    assert_true(monotonic_ms() - t0 >= 300 && monotonic_ms() - t0 < 3000);
    close(live);
    close(dead);
}

static void a_held_turn_is_waited_for_within_the_bound(void **state)
{
    (void)state;
    double waited;
    error_info err;
    assert_int_equal(take_turn(1000, &waited, &err), 0);    /* makes cpu.turn */
    char path[128];
    in_dir(path, sizeof path, "cpu.turn");
    int holder = open(path, O_RDONLY);
    assert_int_equal(flock(holder, LOCK_EX), 0);            /* someone holds it for good */
    assert_int_equal(take_turn(250, &waited, &err), -1);
    assert_string_equal(err.ename, "GPUBusyError");
    assert_true(waited >= 250 && waited < 3000);
    close(holder);
    assert_int_equal(take_turn(1000, &waited, &err), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(another_users_directory_is_refused_by_name, fresh, removed),
        cmocka_unit_test_setup_teardown(a_group_writable_directory_is_refused_and_roots_sticky_one_used, fresh,
                                        removed),
        cmocka_unit_test_setup_teardown(a_symlinked_turn_file_leaves_its_target_alone, fresh, removed),
        cmocka_unit_test_setup_teardown(capacity_counts_only_from_the_directory_owner, fresh, removed),
        cmocka_unit_test_setup_teardown(forged_tickets_are_ignored_and_a_live_one_is_waited_for_within_the_bound,
                                        fresh, removed),
        cmocka_unit_test_setup_teardown(a_held_turn_is_waited_for_within_the_bound, fresh, removed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
