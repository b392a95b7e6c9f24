import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.ByteArrayOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * A RESP2 connection to one Redis node: the few lines a lock needs, since no
 * Java Redis client is installed here. call() sends one command and returns
 * its reply: a String (simple or bulk string), a Long (integer), null (nil
 * bulk or nil array) or a List of those (array); an error reply throws
 * {@link ErrorReply}. A connection that failed (refused, a read timed out, closed)
 * is dropped and the next call dials again, as a pooled connection that threw
 * is discarded: a late reply must never be read as the next command's.
 */
final class Resp implements AutoCloseable {
    /** An error reply (-ERR ...): the command reached the server and was refused. */
    static final class ErrorReply extends RuntimeException {
        private static final long serialVersionUID = 1L;

        ErrorReply(String msg) {
            super(msg);
        }
    }

    private final String host;
    private final int port;
    private final int timeoutMs;
    private Socket socket;
    private InputStream in;
    private OutputStream out;

    /** hostPort is host:port; timeoutMs bounds the dial and every reply. */
    Resp(String hostPort, int timeoutMs) {
        int colon = hostPort.lastIndexOf(':');
        this.host = hostPort.substring(0, colon);
        this.port = Integer.parseInt(hostPort.substring(colon + 1));
        this.timeoutMs = timeoutMs;
    }

    /** Sends one command and reads its reply (see the class comment). */
    Object call(String... args) throws IOException {
        try {
            if (socket == null) {
                dial();
            }
            ByteArrayOutputStream b = new ByteArrayOutputStream();
            b.write(("*" + args.length + "\r\n").getBytes(StandardCharsets.UTF_8));
            for (String a : args) {
                byte[] v = a.getBytes(StandardCharsets.UTF_8);
                b.write(("$" + v.length + "\r\n").getBytes(StandardCharsets.UTF_8));
                b.write(v);
                b.write('\r');
                b.write('\n');
            }
            b.writeTo(out);
            out.flush();
            return read();
        } catch (IOException | RuntimeException e) {
            if (!(e instanceof ErrorReply)) {
                close();
            }
            throw e;
        }
    }

    /**
     * Opens the connection now, as a connection pool does before the first
     * command; a failure is left for the first call to meet.
     */
    void open() {
        try {
            if (socket == null) {
                dial();
            }
        } catch (IOException e) {
            System.err.println("lockstorm: dial " + host + ":" + port + ": " + e);
        }
    }

    private void dial() throws IOException {
        Socket s = new Socket();
        try {
            s.connect(new InetSocketAddress(host, port), timeoutMs);
            s.setSoTimeout(timeoutMs);
            s.setTcpNoDelay(true);
            in = new BufferedInputStream(s.getInputStream());
            out = new BufferedOutputStream(s.getOutputStream());
        } catch (IOException e) {
            s.close();
            throw e;
        }
        socket = s;
    }

    private Object read() throws IOException {
        int type = in.read();
        if (type < 0) {
            throw new EOFException("connection closed by the server");
        }
        String line = line();
        switch (type) {
            case '+':
                return line;
            case '-':
                throw new ErrorReply(line);
            case ':':
                return Long.parseLong(line);
            case '$': {
                int n = Integer.parseInt(line);
                if (n < 0) {
                    return null;
                }
                byte[] v = in.readNBytes(n + 2);
                if (v.length != n + 2) {
                    throw new EOFException("connection closed mid-reply");
                }
                return new String(v, 0, n, StandardCharsets.UTF_8);
            }
            case '*': {
                int n = Integer.parseInt(line);
                if (n < 0) {
                    return null;
                }
                List<Object> items = new ArrayList<>(n);
                for (int i = 0; i < n; i++) {
                    try {
                        items.add(read());
                    } catch (ErrorReply e) {
                        items.add(e);
                    }
                }
                return items;
            }
            default:
                throw new IOException("not RESP: type byte " + type);
        }
    }

    private String line() throws IOException {
        ByteArrayOutputStream b = new ByteArrayOutputStream();
        for (int c; (c = in.read()) != '\r'; ) {
            if (c < 0) {
                throw new EOFException("connection closed mid-reply");
            }
            b.write(c);
        }
        if (in.read() != '\n') {
            throw new IOException("not RESP: CR without LF");
        }
        return b.toString(StandardCharsets.UTF_8);
    }

    /** Drops the connection; the next call dials again. */
    @Override
    public void close() {
        if (socket != null) {
            try {
                socket.close();
            } catch (IOException ignored) {
                // closing a broken socket: nothing left to do
            }
        }
        socket = null;
        in = null;
        out = null;
    }
}
