/*
 * clockshim: an LD_PRELOAD library that shifts a process's wall clock by an
 * offset the lockstorm harness controls at run time. It exists to inject
 * server clock faults (jumps forward/back) into an unmodified redis-server,
 * whose key expiry is computed from the wall clock.
 *
 * Shifted: clock_gettime(CLOCK_REALTIME, CLOCK_REALTIME_COARSE, CLOCK_TAI),
 * gettimeofday and time -- the three wall-clock entry points redis-server
 * imports (nm -D /usr/bin/redis-server). Monotonic and CPU clocks pass through
 * unchanged: Redis measures durations with them, and a clock fault models a
 * wrong wall clock (NTP step, operator error), not time running at a
 * different speed.
 *
 * The offset is an int64 of nanoseconds at byte 0 of the file named by
 * $LOCKSTORM_CLOCK_FILE, mapped shared and read-only, so a store by the
 * harness (through its own shared mapping, as one aligned 64-bit store) is
 * seen by the next clock read of every thread, with no restart and no torn
 * value. No file or no variable means offset 0.
 *
 * Why no dlsym and no malloc: libfaketime looks up the real functions with
 * dlsym(RTLD_NEXT), and dlsym may allocate. In Debian's redis-server the
 * allocator is jemalloc, which reads the clock while it initialises, so the
 * first allocation re-enters the shim before it is ready and the process hangs
 * or crashes at start-up. This shim never asks the dynamic linker for
 * anything: it reads the real clock with the raw clock_gettime system call
 * (syscall(2) is a plain register shuffle in libc), and its lazy set-up uses
 * only getenv, open, fstat, mmap and close, none of which allocate. The price
 * is that every clock read is a real system call instead of a vDSO call
 * (hundreds of nanoseconds), which is harmless for a test harness.
 *
 * Build: gcc -shared -fPIC -O2 -Wall -o clockshim.so clockshim.c
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define CLOCK_FILE_ENV "LOCKSTORM_CLOCK_FILE"
#define NSEC_PER_SEC 1000000000LL
/* How long to wait before looking for a missing offset file again: often
 * enough that a file created after start-up takes effect quickly, rarely
 * enough that a shim without a file costs no extra system calls in practice. */
#define RETRY_NS (100LL * 1000 * 1000)

/* The mapped offset, published once with a compare-and-swap; NULL until then. */
static const int64_t *offset_ptr;
/* Real CLOCK_REALTIME (ns) before which no new mapping attempt is made;
 * -1 means the variable is unset, so never try. */
static int64_t next_try_ns;

static int real_clock_gettime(clockid_t id, struct timespec *ts)
{
	return (int)syscall(SYS_clock_gettime, id, ts);
}

/* map_offset returns the shared offset, mapping the file on first use. Racing
 * threads may each map it; the loser of the publish unmaps its copy, so no
 * lock is needed (and none could be taken safely this early in start-up). */
static const int64_t *map_offset(int64_t now_ns)
{
	const int64_t *p = __atomic_load_n(&offset_ptr, __ATOMIC_ACQUIRE);
	if (p)
		return p;
	int64_t next = __atomic_load_n(&next_try_ns, __ATOMIC_RELAXED);
	if (next < 0 || now_ns < next)
		return NULL;
	__atomic_store_n(&next_try_ns, now_ns + RETRY_NS, __ATOMIC_RELAXED);

	const char *path = getenv(CLOCK_FILE_ENV);
	if (!path || !*path) {
		__atomic_store_n(&next_try_ns, -1, __ATOMIC_RELAXED);
		return NULL;
	}
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	struct stat st;
	/* A shorter file would make the load fault (SIGBUS past end of file). */
	if (fstat(fd, &st) != 0 || st.st_size < (off_t)sizeof(int64_t)) {
		close(fd);
		return NULL;
	}
	void *m = mmap(NULL, sizeof(int64_t), PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (m == MAP_FAILED)
		return NULL;
	const int64_t *expected = NULL;
	if (!__atomic_compare_exchange_n(&offset_ptr, &expected, (const int64_t *)m, 0,
					 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
		munmap(m, sizeof(int64_t));
		return expected;
	}
	return (const int64_t *)m;
}

/* shifted returns the real wall clock in ts shifted by the current offset, as
 * nanoseconds since the epoch. */
static int64_t shifted(const struct timespec *ts)
{
	int64_t ns = (int64_t)ts->tv_sec * NSEC_PER_SEC + ts->tv_nsec;
	const int64_t *p = map_offset(ns);
	if (p)
		ns += __atomic_load_n(p, __ATOMIC_RELAXED);
	return ns;
}

/* split stores ns since the epoch into ts, flooring so that times before
 * the epoch keep tv_nsec in [0, 1e9). */
static void split(int64_t ns, struct timespec *ts)
{
	int64_t sec = ns / NSEC_PER_SEC, rem = ns % NSEC_PER_SEC;
	if (rem < 0) {
		rem += NSEC_PER_SEC;
		sec--;
	}
	ts->tv_sec = (time_t)sec;
	ts->tv_nsec = (long)rem;
}

static int is_wall_clock(clockid_t id)
{
	return id == CLOCK_REALTIME || id == CLOCK_REALTIME_COARSE || id == CLOCK_TAI;
}

int clock_gettime(clockid_t id, struct timespec *ts)
{
	int rc = real_clock_gettime(id, ts);
	if (rc != 0 || !is_wall_clock(id))
		return rc;
	split(shifted(ts), ts);
	return 0;
}

int gettimeofday(struct timeval *restrict tv, void *restrict tz)
{
	if (tz && syscall(SYS_gettimeofday, NULL, tz) != 0)
		return -1;
	/* glibc declares tv nonnull, so there is no NULL case to handle. */
	struct timespec ts;
	if (real_clock_gettime(CLOCK_REALTIME, &ts) != 0)
		return -1;
	split(shifted(&ts), &ts);
	tv->tv_sec = ts.tv_sec;
	tv->tv_usec = ts.tv_nsec / 1000;
	return 0;
}

time_t time(time_t *t)
{
	struct timespec ts;
	if (real_clock_gettime(CLOCK_REALTIME, &ts) != 0)
		return (time_t)-1;
	split(shifted(&ts), &ts);
	if (t)
		*t = ts.tv_sec;
	return ts.tv_sec;
}
