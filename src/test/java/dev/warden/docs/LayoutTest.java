package dev.warden.docs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * The package drawing in docs/development.md's Layout is the code's: each package of {@code src/main/java} is a row,
 * its last column lists exactly the packages its code refers to (imports and qualified names, comments and strings
 * aside), and each of those is a row above it, so there is no cycle and no arrow pointing up.
 */
class LayoutTest {

    private static final Path SOURCES = Path.of("src/main/java/dev/warden");
    private static final Pattern ROW = Pattern.compile("^\\| `([a-z.]+)` \\| [^|]+ \\|(.*)\\|$");
    private static final Pattern NAMED = Pattern.compile("`([a-z.]+)`");
    private static final Pattern REFERENCE = Pattern.compile("\\bdev\\.warden((?:\\.[a-z][a-z0-9]*)+)\\.[A-Z]");

    @Test
    void theDocumentedDrawingIsTheCodesAndPointsOnlyDown() throws IOException {
        Map<String, Set<String>> drawn = drawn();
        Map<String, Set<String>> code = code();
        assertEquals(code.keySet(), new TreeSet<>(drawn.keySet()), "the Layout's rows are the packages of src/main/java");
        List<String> order = new ArrayList<>(drawn.keySet());
        for (Map.Entry<String, Set<String>> row : drawn.entrySet()) {
            String pkg = row.getKey();
            assertEquals(code.get(pkg), row.getValue(), "what dev.warden." + pkg + " uses, as the Layout says it");
            for (String used : row.getValue()) {
                assertTrue(order.indexOf(used) >= 0 && order.indexOf(used) < order.indexOf(pkg),
                        pkg + " uses " + used + ", which is not a row above it: an arrow pointing up (or a cycle)");
            }
        }
    }

    /** A class a reader can hold in their head: none of src/main/java is over 500 lines. */
    @Test
    void noClassIsOverFiveHundredLines() throws IOException {
        Map<String, Integer> tooLong = new TreeMap<>();
        try (Stream<Path> files = Files.walk(SOURCES)) {
            for (Path file : files.filter(f -> f.toString().endsWith(".java")).toList()) {
                int lines = Files.readAllLines(file).size();
                if (lines > 500) {
                    tooLong.put(SOURCES.relativize(file).toString(), lines);
                }
            }
        }
        assertEquals(Map.of(), tooLong, "classes over 500 lines: split them along their seams");
    }

    /** The Layout's rows, in order: each package and the packages it says it uses. */
    private static Map<String, Set<String>> drawn() throws IOException {
        String doc = Files.readString(Path.of("docs/development.md"));
        String layout = doc.substring(doc.indexOf("\n## Layout\n"));
        int next = layout.indexOf("\n## ", 2);
        Map<String, Set<String>> rows = new LinkedHashMap<>();
        for (String line : (next < 0 ? layout : layout.substring(0, next)).lines().toList()) {
            Matcher row = ROW.matcher(line);
            if (row.matches()) {
                Set<String> uses = new TreeSet<>();
                Matcher named = NAMED.matcher(row.group(2));
                while (named.find()) {
                    uses.add(named.group(1));
                }
                rows.put(row.group(1), uses);
            }
        }
        assertTrue(rows.size() > 10, "the Layout's table is read: " + rows);
        return rows;
    }

    /** Each package of the code and the packages of dev.warden its code refers to. */
    private static Map<String, Set<String>> code() throws IOException {
        Map<String, Set<String>> packages = new TreeMap<>();
        try (Stream<Path> files = Files.walk(SOURCES)) {
            for (Path file : files.filter(f -> f.toString().endsWith(".java")).toList()) {
                String pkg = SOURCES.relativize(file.getParent()).toString().replace('/', '.');
                Set<String> uses = packages.computeIfAbsent(pkg, p -> new TreeSet<>());
                Matcher reference = REFERENCE.matcher(code(Files.readString(file)));
                while (reference.find()) {
                    uses.add(reference.group(1).substring(1));
                }
            }
        }
        // A reference to a nested package's class names the nested package, never its parent as well.
        packages.forEach((pkg, uses) -> {
            uses.remove(pkg);
            uses.retainAll(packages.keySet());
        });
        return packages;
    }

    /** Java source with its comments and string literals taken out. */
    private static String code(String source) {
        return source.replaceAll("(?s)/\\*.*?\\*/", "").replaceAll("//[^\\n]*", "").replaceAll("\"(?:\\\\.|[^\"\\\\])*\"", "\"\"");
    }
}
