package dev.warden.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.warden.api.ApiToken;
import dev.warden.config.WardenConfig;
import dev.warden.control.ControlSocket;
import dev.warden.control.ControlSocket.Answer;
import dev.warden.control.ControlSocket.Outcome;
import jakarta.inject.Inject;
import java.io.IOException;
import java.io.PrintWriter;
import java.net.ConnectException;
import java.net.SocketException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

@Command(name = "step-down", mixinStandardHelpOptions = true,
        description = {
            "Gate mode: hand the data dir to a standby on purpose (a switchover). The warden serving in this container"
                    + " tells lilbee to stop and lets the gate go; a standby's warden is elected and its lilbee, waiting"
                    + " warm, starts. This pod stands by, and contends again a second after nothing of it holds the gate:"
                    + " with no standby, it serves again.",
            "Run it where lilbee serves (GET /api/v1/role answers 200 on that pod): kubectl exec POD -c warden -- warden"
                    + " step-down. It asks the warden of this container through warden.gate.control-socket, which answers"
                    + " warden's own user alone; with --url, a warden anywhere through its API, with warden.api.token.",
            "A pod going away steps down by itself: lilbee's supervisor, SIGTERMed, asks its warden first.",
        },
        exitCodeListHeading = "%nExit codes:%n", exitCodeList = {"0:this warden no longer serves: the gate went to a standby",
            "1:an error, or still stepping down when --wait ran out (lease mode lets the Lease go once lilbee has stopped)",
            "2:usage error", "3:this warden is not elected: nothing to hand over"})
public class StepDownCommand implements Callable<Integer> {

    @Option(names = "--wait", paramLabel = "SECONDS", defaultValue = "15",
            description = "How long to wait for the handover, 0 to " + ControlSocket.MAX_WAIT_SECONDS + " (default: ${DEFAULT-VALUE}).")
    int waitSeconds;

    @Option(names = "--url", paramLabel = "URL", description = "Ask the warden at URL through its API (POST"
            + " /api/v1/gate/step-down) instead of this container's: it needs warden.api.token or warden.api.token-file.")
    Optional<URI> url;

    @Spec
    CommandSpec spec;

    @Inject
    WardenConfig config;

    @Inject
    ApiToken token;

    @Inject
    ObjectMapper mapper;

    @Override
    public Integer call() throws IOException, InterruptedException {
        if (waitSeconds < 0 || waitSeconds > ControlSocket.MAX_WAIT_SECONDS) {
            throw new CommandLine.ParameterException(spec.commandLine(), "--wait must be 0 to " + ControlSocket.MAX_WAIT_SECONDS
                    + " seconds, not " + waitSeconds);
        }
        PrintWriter err = spec.commandLine().getErr();
        Optional<Answer> answer = url.isPresent() ? overHttp(url.get(), err) : overSocket(config.gate().controlSocket(), err);
        if (answer.isEmpty()) {
            return ExitCodes.ERROR;
        }
        return switch (answer.get().outcome()) {
            case STEPPED_DOWN -> {
                spec.commandLine().getOut().println("stepped down: " + answer.get().reason());
                yield ExitCodes.OK;
            }
            case STEPPING -> {
                err.println("warden: still stepping down after " + waitSeconds + " s: " + answer.get().reason());
                yield ExitCodes.ERROR;
            }
            case NOT_ELECTED -> {
                err.println("warden: this warden is not elected, so it has nothing to hand over (" + answer.get().reason()
                        + "). Ask the pod that serves: GET /api/v1/role answers 200 there.");
                yield ExitCodes.LOCK_REFUSED;
            }
            case REFUSED -> {
                err.println("warden: refused: " + answer.get().reason());
                yield ExitCodes.ERROR;
            }
        };
    }

    private Optional<Answer> overSocket(Path socket, PrintWriter err) throws IOException {
        try {
            return Optional.of(ControlSocket.stepDown(socket, waitSeconds));
        } catch (SocketException | java.nio.file.NoSuchFileException e) {
            err.println("warden: no warden answers at " + socket + " (" + e.getMessage() + "): run this in the container of a"
                    + " `warden serve --mode gate`, or name its control socket with warden.gate.control-socket");
            return Optional.empty();
        }
    }

    private Optional<Answer> overHttp(URI base, PrintWriter err) throws IOException, InterruptedException {
        Optional<String> bearer = token.expected();
        if (bearer.isEmpty()) {
            err.println("warden: --url asks a warden through its API, which needs its token: set warden.api.token"
                    + " (WARDEN_API_TOKEN) or warden.api.token-file as that warden has it");
            return Optional.empty();
        }
        HttpRequest request = HttpRequest.newBuilder(base.resolve("/api/v1/gate/step-down?wait=" + waitSeconds))
                .timeout(Duration.ofSeconds(waitSeconds + 10L)).header("Authorization", "Bearer " + bearer.get())
                .POST(HttpRequest.BodyPublishers.noBody()).build();
        HttpResponse<String> response;
        try (HttpClient client = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build()) {
            response = client.send(request, HttpResponse.BodyHandlers.ofString());
        } catch (ConnectException e) {
            err.println("warden: nothing answers at " + base);
            return Optional.empty();
        }
        String said = said(response.body());
        return switch (response.statusCode()) {
            case 200 -> Optional.of(new Answer(Outcome.STEPPED_DOWN, said));
            case 202 -> Optional.of(new Answer(Outcome.STEPPING, said));
            case 409 -> Optional.of(new Answer(Outcome.NOT_ELECTED, said));
            default -> {
                err.println("warden: " + base + " answered " + response.statusCode() + ": " + said);
                yield Optional.empty();
            }
        };
    }

    /** The answer's reason or error, as warden's API words it; nothing of an answer that is not warden's JSON. */
    private String said(String body) {
        try {
            JsonNode json = mapper.readTree(body);
            JsonNode text = json.has("error") ? json.get("error") : json.get("reason");
            if (text != null && text.isTextual()) {
                return text.asText();
            }
        } catch (IOException e) {
            // not warden's answer
        }
        return "(no reason given)";
    }
}
