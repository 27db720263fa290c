package dev.warden.lock;

import static org.junit.jupiter.api.Assertions.assertEquals;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.InputStream;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import org.junit.jupiter.api.Test;

/**
 * A native image can make only the downcalls registered when it was built; a shape missing from
 * the metadata fails at run time, on the first lock. No native-image runs here, so this keeps the
 * registration and {@link Libc#DOWNCALLS} equal instead.
 */
class NativeImageMetadataTest {

    private static final String METADATA = "/META-INF/native-image/dev.warden/warden/reachability-metadata.json";

    private static String canonical(MemoryLayout layout) {
        if (layout.equals(ValueLayout.JAVA_INT)) {
            return "jint";
        }
        if (layout.equals(ValueLayout.JAVA_LONG)) {
            return "jlong";
        }
        if (layout.equals(ValueLayout.ADDRESS)) {
            return "void*";
        }
        throw new AssertionError("no canonical name for " + layout + " here: add it to this test and the metadata");
    }

    private static String shape(String returnType, List<String> parameters, boolean errno, int firstVariadic) {
        return returnType + parameters + (errno ? " captureCallState" : "") + (firstVariadic >= 0 ? " firstVariadicArg=" + firstVariadic : "");
    }

    @Test
    void everyDowncallShapeIsRegisteredForNativeImageAndNothingElse() throws Exception {
        Set<String> used = new TreeSet<>();
        for (Libc.Downcall call : Libc.DOWNCALLS) {
            List<String> parameters = call.descriptor().argumentLayouts().stream().map(NativeImageMetadataTest::canonical).toList();
            String returns = call.descriptor().returnLayout().map(NativeImageMetadataTest::canonical).orElse("void");
            used.add(shape(returns, parameters, call.capturesErrno(), call.firstVariadicArg()));
        }
        Set<String> registered = new TreeSet<>();
        try (InputStream in = NativePosix.class.getResourceAsStream(METADATA)) {
            for (JsonNode downcall : new ObjectMapper().readTree(in).at("/foreign/downcalls")) {
                List<String> parameters = new ArrayList<>();
                downcall.path("parameterTypes").forEach(p -> parameters.add(p.asText()));
                registered.add(shape(downcall.path("returnType").asText(), parameters,
                        downcall.at("/options/captureCallState").asBoolean(false),
                        downcall.at("/options/firstVariadicArg").asInt(-1)));
            }
        }
        assertEquals(used, registered, METADATA + " must list exactly the shapes Libc links");
    }
}
