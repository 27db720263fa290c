package dev.warden.testing;

import java.net.InetAddress;
import java.net.ServerSocket;

/** A stand-in for llama-server: argv[0] "llama-server", {@code --port N}, holding that port until killed. */
public final class FakeLlamaServer {

    public static void main(String[] args) throws Exception {
        int port = Integer.parseInt(args[1]);
        try (ServerSocket socket = new ServerSocket(port, 1, InetAddress.getLoopbackAddress())) {
            System.out.println("listening");
            System.out.flush();
            while (true) {
                socket.accept().close();
            }
        }
    }
}
