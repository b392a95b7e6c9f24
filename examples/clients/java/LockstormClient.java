import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * The lockstorm client protocol for Java locks (grammar: PROTOCOL.md and the
 * package documentation of lockimpl/exec). A lock implements {@link Lock} and
 * its main calls {@link #serve}; this class does the talking, as
 * lockstorm_client.py does for Python.
 */
final class LockstormClient {
    private LockstormClient() {}

    /** LOCKSTORM_NODES: the Redis nodes, each through this client's own proxy. */
    static final List<String> NODES = nodes();

    /** LOCKSTORM_CLIENT: this client's number. */
    static final int CLIENT = Integer.parseInt(env("LOCKSTORM_CLIENT", "0"));

    private static boolean points;
    private static final BufferedReader IN =
            new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    private static final PrintStream OUT = new PrintStream(System.out, false, StandardCharsets.UTF_8);

    /** A definite no: every reply was received; nothing was taken. */
    static final class Fail extends Exception {
        private static final long serialVersionUID = 1L;

        Fail(String msg) {
            super(msg);
        }
    }

    /** What a release answers: ok, or unknown when its library returns nothing. */
    enum Released {
        OK,
        UNKNOWN
    }

    /** A lock on trial: the harness's acquire and release requests. */
    interface Lock {
        /** Acquires key and returns the token written to Redis, or throws Fail. */
        String acquire(String key) throws Exception;

        /** Releases key held with token, or throws Fail. */
        Released release(String key, String token) throws Exception;
    }

    private static String env(String name, String def) {
        String v = System.getenv(name);
        return v == null || v.isEmpty() ? def : v;
    }

    private static List<String> nodes() {
        List<String> out = new ArrayList<>();
        for (String a : env("LOCKSTORM_NODES", "").split(",")) {
            if (!a.isEmpty()) {
                out.add(a);
            }
        }
        return out;
    }

    /**
     * A lock option in milliseconds: the scenario's (LOCKSTORM_NAME_MS) or the
     * lock's own default when the scenario leaves it at 0.
     */
    static long optMs(String name, long def) {
        long v = Long.parseLong(env("LOCKSTORM_" + name + "_MS", "0"));
        return v > 0 ? v : def;
    }

    /**
     * A connection to node i, opened at once (a long-running service's pool is
     * warm: its first lock should not pay for the dial). Its timeout (1 s, the
     * dial and every reply) is how a lock learns a reply was lost, as
     * lockstorm_client.py's connect().
     */
    static Resp connect(int i) {
        Resp r = new Resp(NODES.get(i), 1000);
        r.open();
        return r;
    }

    private static synchronized void say(String line) {
        OUT.print(line + "\n");
        OUT.flush();
    }

    /** Writes text to the harness's debug log (one line). */
    static void log(String text) {
        say("log " + oneLine(text));
    }

    /** A failpoint: when the harness asked for them, announce it and wait for go. */
    static void point(String name) throws IOException {
        if (!points) {
            return;
        }
        say("point " + name);
        String line = IN.readLine();
        if (line == null || !Arrays.asList(line.trim().split(" ")).equals(List.of("go", name))) {
            System.err.println("lockstorm: want \"go " + name + "\", got " + line);
            System.exit(1);
        }
    }

    private static String oneLine(String s) {
        return s == null ? "" : s.trim().replaceAll("\\s+", " ");
    }

    /**
     * Serves the harness's requests until stdin ends. hello is the fields of
     * the hello reply (percent-encoded values). A Fail answers fail; any other
     * exception (a lost reply, a timeout) leaves the outcome unknown: error.
     */
    static void serve(String hello, Lock lock) throws IOException {
        for (String line; (line = IN.readLine()) != null; ) {
            String[] f = line.trim().split("\\s+");
            if (f[0].isEmpty()) {
                continue;
            }
            try {
                switch (f[0]) {
                    case "hello":
                        points = Arrays.asList(f).subList(2, f.length).contains("points=on");
                        say("hello 1 " + hello);
                        break;
                    case "acquire":
                        say("ok " + lock.acquire(f[1]));
                        break;
                    case "release":
                        say(lock.release(f[1], f[2]) == Released.UNKNOWN ? "unknown" : "ok");
                        break;
                    default:
                        say("error unknown request " + f[0]);
                }
            } catch (Fail e) {
                say("fail " + oneLine(e.getMessage()));
            } catch (Exception e) {
                say("error " + e.getClass().getSimpleName() + ": " + oneLine(e.getMessage()));
            }
        }
    }
}
