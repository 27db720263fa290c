package dev.warden.config;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.Map;
import java.util.Optional;

/**
 * A path as lilbee canonicalises it before it derives a lock from it: Python's
 * {@code os.path.realpath(os.path.expanduser(p))}. Symbolic links are resolved component by
 * component, as the kernel walks them, so {@code link/..} is the link target's parent (where
 * {@link Path#normalize()} would say the link's); a path that does not exist yet resolves to where
 * it will be created. Two spellings of one directory must be one lock.
 */
public final class Realpath {

    /** The kernel's own limit on links followed in one lookup (Linux's MAXSYMLINKS). */
    private static final int MAX_LINKS = 40;

    private final Path cwd;
    private final Map<String, String> env;

    /**
     * @param cwd what a relative path is relative to: the working directory
     * @param env the environment, for {@code ~} ({@code $HOME})
     */
    public Realpath(Path cwd, Map<String, String> env) {
        this.cwd = cwd;
        this.env = env;
    }

    public Path of(Path path) {
        return of(path.toString());
    }

    /** {@code realpath(expanduser(raw))}; whitespace is kept, as Python keeps it. */
    public Path of(String raw) {
        String expanded = expandUser(raw);
        Deque<String> todo = new ArrayDeque<>();
        push(todo, expanded.startsWith("/") ? expanded : cwd + "/" + expanded);
        Path resolved = Path.of("/");
        int links = 0;
        while (!todo.isEmpty()) {
            String name = todo.pop();
            if (name.isEmpty() || name.equals(".")) {
                continue;
            }
            if (name.equals("..")) {
                resolved = resolved.getParent() == null ? resolved : resolved.getParent();
                continue;
            }
            Path next = resolved.resolve(name);
            if (!Files.isSymbolicLink(next)) {
                resolved = next;
                continue;
            }
            String target;
            try {
                target = Files.readSymbolicLink(next).toString();
            } catch (IOException e) {
                resolved = next;
                continue;
            }
            if (++links > MAX_LINKS) {
                // Python gives up the same way: the rest of the path stays as written.
                resolved = next;
                continue;
            }
            push(todo, target);
            if (target.startsWith("/")) {
                resolved = Path.of("/");
            }
        }
        return resolved;
    }

    private static void push(Deque<String> todo, String path) {
        String[] names = path.split("/", -1);
        for (int i = names.length - 1; i >= 0; i--) {
            todo.push(names[i]);
        }
    }

    /** {@code ~} and {@code ~/...} from {@code $HOME}; {@code ~user} from the password database. */
    String expandUser(String raw) {
        if (!raw.startsWith("~")) {
            return raw;
        }
        int slash = raw.indexOf('/');
        String user = slash < 0 ? raw.substring(1) : raw.substring(1, slash);
        String rest = slash < 0 ? "" : raw.substring(slash);
        Optional<String> home = user.isEmpty()
                ? Optional.ofNullable(env.get("HOME")).or(() -> Optional.of(System.getProperty("user.home")))
                : homeOf(user);
        return home.map(h -> h.replaceAll("/+$", "") + rest).map(p -> p.isEmpty() ? "/" : p).orElse(raw);
    }

    private static Optional<String> homeOf(String user) {
        try (var lines = Files.lines(Path.of("/etc/passwd"))) {
            return lines.map(line -> line.split(":", -1)).filter(f -> f.length >= 6 && f[0].equals(user))
                    .map(f -> f[5]).findFirst();
        } catch (IOException | java.io.UncheckedIOException e) {
            return Optional.empty();
        }
    }
}
