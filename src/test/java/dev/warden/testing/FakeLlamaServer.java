package dev.warden.testing;

import com.sun.net.httpserver.HttpServer;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;

/**
 * A stand-in for llama-server: argv[0] "llama-server", {@code --port N}, holding that port until
 * killed and answering {@code GET /health} as llama-server does. For the default suite's fake
 * llama-swap ({@link FakeLlamaSwap}) and the engine's own tests, which must run with only a JDK: wherever
 * llama-swap is real, so is its server ({@link RealLlamaServer}).
 */
public final class FakeLlamaServer {

    public static void main(String[] args) throws Exception {
        int port = Integer.parseInt(args[1]);
        HttpServer http = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), port), 16);
        http.createContext("/", exchange -> {
            try (exchange) {
                boolean health = exchange.getRequestURI().getPath().equals("/health");
                byte[] body = (health ? "{\"status\": \"ok\"}" : "{\"error\": \"not found\"}").getBytes(StandardCharsets.UTF_8);
                exchange.sendResponseHeaders(health ? 200 : 404, body.length);
                exchange.getResponseBody().write(body);
            }
        });
        http.start();
        System.out.println("listening");
        System.out.flush();
        Thread.sleep(Long.MAX_VALUE);
    }
}
