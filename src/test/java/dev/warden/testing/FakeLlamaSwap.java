package dev.warden.testing;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A stand-in for llama-swap, run as its own process (argv[0] "llama-swap", its own process
 * group) by {@link FakeEngine}. It speaks the part of llama-swap's HTTP contract warden uses
 * (PROTOCOL.md section 4) and prints each event on stdout for the test to read.
 *
 * <p>Arguments: {@code --port N} (0: no HTTP at all), {@code --ignore-term}, {@code --refuse-unload},
 * {@code --slow-unload MS} (prints "unloading", answers MS later), {@code --old-api} (only {@code GET /unload}), {@code --api-key K}, {@code --server-port N}
 * (spawn a child named llama-server, in its own group, listening on N); hostile answers to
 * {@code /running}: {@code --huge-running} (a 256 MB body), {@code --trickle-running} (one byte a second).
 * Each request's Authorization header is printed as "auth &lt;value&gt;".
 *
 * <p>Why a fake where the real engine runs elsewhere ({@link RealLlamaSwap}): the default suite must run with only a
 * JDK, where neither llama-swap nor llama-server is built, and these knobs are misbehaviour no real engine shows on
 * demand (a SIGTERM ignored, an unload refused or slowed, a hostile {@code /running}).
 */
public final class FakeLlamaSwap {

    public static void main(String[] args) throws Exception {
        int port = 0;
        boolean ignoreTerm = false;
        boolean refuseUnload = false;
        long slowUnloadMillis = 0;
        boolean oldApi = false;
        String apiKey = null;
        List<Integer> serverPorts = new ArrayList<>();
        String hostile = null;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--port" -> port = Integer.parseInt(args[++i]);
                case "--ignore-term" -> ignoreTerm = true;
                case "--refuse-unload" -> refuseUnload = true;
                case "--slow-unload" -> slowUnloadMillis = Long.parseLong(args[++i]);
                case "--old-api" -> oldApi = true;
                case "--api-key" -> apiKey = args[++i];
                case "--server-port" -> serverPorts.add(Integer.parseInt(args[++i]));
                case "--huge-running", "--trickle-running" -> hostile = args[i];
                default -> throw new IllegalArgumentException(args[i]);
            }
        }
        if (ignoreTerm) {
            sun.misc.Signal.handle(new sun.misc.Signal("TERM"), signal -> say("ignored SIGTERM"));
        } else {
            // When the signal arrived, on CLOCK_MONOTONIC (as System.nanoTime is on Linux), for the benchmarks.
            sun.misc.Signal.handle(new sun.misc.Signal("TERM"), signal -> {
                say("term " + System.nanoTime());
                Runtime.getRuntime().halt(143);
            });
        }
        for (int serverPort : serverPorts) {
            FakeEngine.startChildLlamaServer(serverPort).waitUntilListening();
            say("server " + serverPort);
        }
        AtomicBoolean loaded = new AtomicBoolean(true);
        if (port > 0) {
            HttpServer http = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), port), 16);
            final String key = apiKey;
            final boolean refuse = refuseUnload;
            final boolean old = oldApi;
            final long slowUnload = slowUnloadMillis;
            final String hostileRunning = hostile;
            http.createContext("/", exchange -> {
                try (exchange) {
                    String path = exchange.getRequestURI().getPath();
                    String method = exchange.getRequestMethod();
                    say("auth " + exchange.getRequestHeaders().getFirst("Authorization"));
                    if (hostileRunning != null && path.equals("/running")) {
                        hostile(exchange, hostileRunning);
                        return;
                    }
                    if (!path.equals("/health") && key != null
                            && !("Bearer " + key).equals(exchange.getRequestHeaders().getFirst("Authorization"))) {
                        reply(exchange, 401, "{\"error\": \"unauthorized\"}");
                        return;
                    }
                    switch (method + " " + path) {
                        case "GET /health" -> reply(exchange, 200, "OK");
                        case "GET /running" -> reply(exchange, 200, loaded.get()
                                ? "{\"running\": [{\"model\": \"m\", \"state\": \"ready\"}]}" : "{\"running\": []}");
                        case "POST /api/models/unload" -> {
                            if (old) {
                                reply(exchange, 404, "404 page not found");
                            } else if (slowUnload > 0) {
                                say("unloading");
                                try {
                                    Thread.sleep(slowUnload);
                                } catch (InterruptedException e) {
                                    Thread.currentThread().interrupt();
                                }
                                loaded.set(false);
                                say("unloaded");
                                reply(exchange, 200, "{\"msg\": \"ok\"}");
                            } else if (refuse) {
                                say("unload refused");
                                reply(exchange, 503, "{\"error\": {\"message\": \"busy loading\"}}");
                            } else {
                                loaded.set(false);
                                say("unloaded");
                                reply(exchange, 200, "{\"msg\": \"ok\"}");
                            }
                        }
                        case "GET /unload" -> {
                            loaded.set(false);
                            say("unloaded via GET /unload");
                            reply(exchange, 200, "OK");
                        }
                        default -> reply(exchange, 404, "404 page not found");
                    }
                }
            });
            http.start();
        }
        say("ready");
        Thread.sleep(Long.MAX_VALUE);
    }

    static synchronized void say(String line) {
        System.out.println(line);
        System.out.flush();
    }

    /** An answer that never ends in reasonable time or size; the client is expected to give up on it. */
    private static void hostile(HttpExchange exchange, String kind) throws IOException {
        exchange.sendResponseHeaders(200, 0);
        var body = exchange.getResponseBody();
        long written = 0;
        try {
            if (kind.equals("--huge-running")) {
                body.write("{\"running\": [".getBytes(StandardCharsets.UTF_8));
                byte[] chunk = new byte[64 * 1024];
                java.util.Arrays.fill(chunk, (byte) ' ');
                for (int i = 0; i < 4096; i++) {
                    body.write(chunk);
                    written += chunk.length;
                }
            } else {
                for (int i = 0; i < 600; i++) {
                    body.write(' ');
                    body.flush();
                    Thread.sleep(1000);
                }
            }
        } catch (IOException | InterruptedException e) {
            // the client hung up, as it should
        }
        say("wrote " + written);
    }

    private static void reply(HttpExchange exchange, int status, String body) throws IOException {
        byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
        exchange.sendResponseHeaders(status, bytes.length);
        exchange.getResponseBody().write(bytes);
    }
}
