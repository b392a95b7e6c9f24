// Package exec puts a lock written in any language on trial: it is a
// lockimpl.Locker whose client is an external process speaking a line
// protocol on its stdin and stdout. The harness runs the critical section
// and the resource exactly as for Go locks, so every scenario, check and
// report applies unchanged; client faults act on the process itself (pause
// is SIGSTOP/SIGCONT of its process group, crash is SIGKILL, clock faults
// move the wall clock its runtime reads through the LD_PRELOAD clock shim).
//
// # Process
//
// lockstorm starts one process per client, in its own process group, with
// PR_SET_PDEATHSIG=SIGKILL (it dies with lockstorm, even when lockstorm is
// SIGKILLed) and kills the group at the end of the run. The environment
// tells the client who it is and where Redis is:
//
//	LOCKSTORM_PROTOCOL   1
//	LOCKSTORM_NODES      host:port,host:port,...  the Redis masters in node
//	                     order, each through this client's own proxy (empty
//	                     when lockstorm only asks hello: answer and exit)
//	LOCKSTORM_CLIENT     the client number (0-based)
//	LOCKSTORM_SEED       a seed for the client's own randomness (tokens)
//	LOCKSTORM_TTL_MS, LOCKSTORM_RETRY_COUNT, LOCKSTORM_RETRY_DELAY_MS,
//	LOCKSTORM_WAIT_TIMEOUT_MS, LOCKSTORM_NODE_TIMEOUT_MS, LOCKSTORM_WATCHDOG
//	(0/1), LOCKSTORM_RELEASE   the scenario's lock options; 0 or empty means
//	                     "the lock's own default"
//	LOCKSTORM_COMMAND_TIMEOUT_MS   how long the harness's own connections
//	                     wait for a reply (the scenario's client_timeout):
//	                     a reply the schedule makes late comes within it
//	LOCKSTORM_CLOCK_FILE, LD_PRELOAD   the clock shim (see below)
//
// # Grammar
//
// One line per message, fields separated by single spaces, "\n" ended.
// Keys and tokens never contain white space. Stdout carries protocol lines
// only (write anything else to stderr, which lockstorm logs at debug level);
// flush after every line.
//
//	harness → client                      client → harness
//	hello 1 points=on|off                 hello 1 [name=N] [summary=TEXT] [nodes=N]
//	                                            [points=P,P] [extend=true] [lost=true]
//	                                            [redis_key=TEMPLATE] [CLAIM=VALUE ...]
//	acquire KEY                           ok TOKEN [fence=N] [validity=MS]
//	release KEY TOKEN                     ok
//	extend KEY TOKEN TTL_MS               ok [validity=MS]
//	                                      fail [TEXT...]   definite: not done
//	                                      error [TEXT...]  outcome unknown
//	                                      unknown [TEXT...] the library answers nothing
//	                                      lost TOKEN       (any time, with lost=true)
//	                                      point NAME       (any time; wait for go)
//	go NAME                               log TEXT...      (any time)
//
// hello is the first request: the client answers with what it is (a short
// name for tables, how many Redis nodes it needs, its failpoints) and what
// it claims, from which the battery derives its expectations: the fields of
// lockimpl.Claims by their names (topology=single|quorum,
// expiry=none|server|server-separate|client-clock,
// release=owner-checked|unconditional|time-checked|expired-only,
// racy_takeover, fencing, renewal, replica_ack, whole_seconds,
// server_ttl, grant_checked, grant_monotonic, grant_confirmed,
// extend_checked, notified_wait, extend_recreates, fixed_retry_delay,
// extend_retries, waits_out = true|false; renewal_every = a share of the TTL, e.g.
// 0.8; backoff_growth = a factor over 1 with backoff_cap = a share of the
// TTL). Declaring
// topology declares claims, and expiry and release must then be given; a
// client that declares none gets no expectation (its verdicts are
// reported, never a DIFF).
// whole_seconds=true also declares the lock's timescale
// (lockimpl.Claims.Granularity): a scenario whose TTL is under three
// seconds then runs with every time stretched by one factor, TTL to 3 s
// (LOCKSTORM_TTL_MS and the other options arrive scaled), and the row's
// evidence says so.
// extend=true says the client answers extend; the harness sends extend
// (after every workload.extend_every of a hold, TTL_MS = lock.ttl) only to
// a client that said so, records it like any operation and judges its ok
// against the servers' key events (an extend acknowledged on a key that was
// gone or someone else's is a false success).
// Values are percent-encoded (%20 for a space). A request gets
// exactly one reply, in order: ok (acquired, with the token written to Redis
// and the fencing token when the lock issues one; released; extended), fail
// (a definite no: every reply was received and says the lock is not
// ours/not free, or the client's own wait ran out on definite replies) or
// error (a reply was lost or the client gave up mid-command: the command may
// still land, so the history keeps the operation open). unknown is the
// answer of a library call that returns nothing (a release that resolves
// whether or not it deleted): an unknown outcome, as error, but no fault.
// lost=true says the client writes "lost TOKEN" whenever its library
// signals that a lease is gone (a failed refresh): that lease's Lost
// closes, and a careful client stops acting on it. redis_key=TEMPLATE
// ({key} for the harness's key, e.g. mutex:{key}) is the Redis key a
// library really uses when it prefixes its keys and cannot be told
// otherwise: the servers' observers watch that key (lockimpl.Info.RedisKey).
//
// Failpoints are cooperative: when hello said points=on, the client writes
// "point NAME" at each of its named steps (NAME is impl/step, e.g.
// getset/before-getset; a port may reuse the Go implementation's names so
// the same scheduled scenario drives both) and waits for "go NAME". The
// harness runs the scenario's actions for that point (barriers, sleeps,
// faults) before answering; a crash action kills the process there. With
// points=off the client announces nothing.
//
// Command points need no cooperation: a client program makes its own
// connections (Info.OwnConnections), so when a scenario explores or names
// cmd/... points the runner relays each of its connections through a proxy
// that reads the RESP stream and passes cmd/NODE/COMMAND/before before a
// command goes on and cmd/NODE/COMMAND/after before its reply comes back.
//
// # Timeouts and broken clients
//
// An acquire must be answered within the lock's wait timeout (default 10 s)
// plus 5 s, a release or extend within 5 s; time the process spends stopped
// (a pause fault) or waiting at a point does not count. A missing reply, a
// reply that breaks the grammar (or one nobody asked for), or a process that
// dies on its own ends the request with an unknown outcome: the process is
// killed, the event is counted (lockimpl.ProcessStats, shown after the
// table), and a fresh process serves the client's next request.
//
// # Clock
//
// The clock shim (internal/clock/clockshim) is preloaded into every client
// process. It shifts the wall clock — clock_gettime(CLOCK_REALTIME*),
// gettimeofday and time, which is what PHP's time(), Python's time.time()
// and node's Date.now() read — by the client's offset, which lockstorm keeps
// equal to the client's lockimpl.Clock (offsets, jumps, drift). The
// monotonic clock is left alone: runtimes hand absolute monotonic deadlines
// to the kernel (Python 3.11's time.sleep uses clock_nanosleep
// TIMER_ABSTIME), which a user-space shift would turn into wrong sleeps;
// the clients shipped here compute expiry from the wall clock.
package exec
