package dev.warden.testing;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * A neighbour container that floods warden's ports from inside its pod, and the kubelet's probe from
 * outside it: for the connection-limit tests and the benchmark of probes under a flood.
 */
public final class ConnectionFlood implements AutoCloseable {

    private static final ObjectMapper JSON = new ObjectMapper();

    /**
     * A neighbour's connections, for {@code seconds}, to each {@code host:port} target: {@code flood} keeps
     * {@code n} open, reconnecting the moment warden closes one; {@code trickle} opens {@code n} and sends
     * one byte of a request line to each every 100 ms, never ending it; {@code retrickle} trickles and
     * reconnects the moment warden closes one; a fifth field, an IPv4 address, is the connections' source. Prints per
     * target how many
     * warden closed within half a second of their connect (refused), how many are open and older than
     * that at the end (held), and the longest any lived.
     */
    private static final String NEIGHBOUR = """
            import json, resource, socket, sys, time
            hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
            seconds, targets = float(sys.argv[1]), [t.split(':') for t in sys.argv[2:]]
            state = [{'host': h, 'port': int(p), 'n': int(n), 'mode': m, 'source': (rest[0], 0) if rest else None,
                      'socks': [], 'refused': 0, 'longest': 0.0} for h, p, n, m, *rest in targets]
            def connect(t):
                s = socket.create_connection((t['host'], t['port']), timeout=5, source_address=t['source'])
                s.setblocking(False)
                t['socks'].append((s, time.monotonic()))
            for t in state:
                for _ in range(t['n']):
                    connect(t)
            print('connected', flush=True)
            end = time.monotonic() + seconds
            while time.monotonic() < end:
                for t in state:
                    alive = []
                    for s, since in t['socks']:
                        closed = False
                        try:
                            if t['mode'] in ('trickle', 'retrickle'):
                                s.send(b'G')
                            closed = s.recv(4096) == b''
                        except BlockingIOError:
                            pass
                        except OSError:
                            closed = True
                        if closed:
                            lived = time.monotonic() - since
                            t['longest'] = max(t['longest'], lived)
                            if lived < 0.5:
                                t['refused'] += 1
                            s.close()
                        else:
                            alive.append((s, since))
                    t['socks'] = alive
                    if t['mode'] in ('flood', 'retrickle'):
                        for _ in range(t['n'] - len(alive)):
                            connect(t)
                time.sleep(0.1)
            now = time.monotonic()
            print(json.dumps([{'target': '%s:%d' % (t['host'], t['port']), 'source': t['source'] and t['source'][0],
                               'refused': t['refused'],
                               'held': sum(1 for s, since in t['socks'] if now - since >= 0.5),
                               'longest': max([t['longest']] + [now - since for s, since in t['socks']])} for t in state]),
                  flush=True)
            """;

    private final Process neighbour;

    private ConnectionFlood(Process neighbour) {
        this.neighbour = neighbour;
    }

    /**
     * Starts the neighbour in {@code pod} for {@code seconds}, with targets {@code host:port:n:flood|trickle|retrickle};
     * returns once every first connection is made.
     */
    public static ConnectionFlood start(PodNetwork pod, double seconds, String... targets) throws IOException {
        return start(pod.enter(), seconds, targets);
    }

    /** As {@link #start(PodNetwork, double, String...)}, from outside the pod: other pods, or the node itself. */
    public static ConnectionFlood fromOutside(double seconds, String... targets) throws IOException {
        return start(List.of(), seconds, targets);
    }

    private static ConnectionFlood start(List<String> prefix, double seconds, String... targets) throws IOException {
        List<String> command = new ArrayList<>(prefix);
        command.addAll(List.of("python3", "-c", NEIGHBOUR, Double.toString(seconds)));
        command.addAll(List.of(targets));
        ConnectionFlood flood = new ConnectionFlood(new ProcessBuilder(command).redirectError(ProcessBuilder.Redirect.INHERIT).start());
        String line = new String(readLine(flood.neighbour.getInputStream()), StandardCharsets.UTF_8);
        if (!"connected".equals(line)) {
            flood.close();
            throw new IOException("the neighbour did not connect: " + line);
        }
        return flood;
    }

    /** What the neighbour saw, per target: {@code refused}, {@code held} and {@code longest} (see the script). */
    public JsonNode report() throws IOException, InterruptedException {
        JsonNode report = JSON.readTree(readLine(neighbour.getInputStream()));
        if (!neighbour.waitFor(30, TimeUnit.SECONDS)) {
            throw new IOException("the neighbour did not end");
        }
        return report;
    }

    @Override
    public void close() {
        neighbour.destroyForcibly();
        try {
            neighbour.waitFor(10, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /**
     * A kubelet probe: a new connection, a GET, the status line within {@code timeoutMs} (the kubelet's
     * default is one second); -1 when none came.
     */
    public static int probe(String host, int port, String path, int timeoutMs) {
        try (Socket socket = new Socket()) {
            socket.connect(new InetSocketAddress(host, port), timeoutMs);
            socket.setSoTimeout(timeoutMs);
            OutputStream out = socket.getOutputStream();
            out.write(("GET " + path + " HTTP/1.1\r\nHost: " + host + "\r\nConnection: close\r\n\r\n")
                    .getBytes(StandardCharsets.US_ASCII));
            out.flush();
            String status = new String(readLine(socket.getInputStream()), StandardCharsets.US_ASCII);
            return status.startsWith("HTTP/1.1 ") ? Integer.parseInt(status.substring(9, 12)) : -1;
        } catch (IOException | NumberFormatException e) {
            return -1;
        }
    }

    private static byte[] readLine(InputStream in) throws IOException {
        ByteArrayOutputStream line = new ByteArrayOutputStream();
        for (int b = in.read(); b != -1 && b != '\n'; b = in.read()) {
            line.write(b);
        }
        return line.toByteArray();
    }
}
