#!/usr/bin/env bash
# Builds a GraalVM-like home whose bin/native-image builds warden's native executable, from three sources and no
# GraalVM download: the JDK static libraries built from OpenJDK 26.0.2.1's source in Debian's archive (openjdk-26 of
# forky and sid; patched back to JDK 25's one differing JNI signature), Maven Central's org.graalvm.nativeimage:svm:25.0.2
# and its dependencies, and ../shared/peers/graal-vm-25.0.2-native-parts.tar.gz (SubstrateVM's C libraries, the FFM
# support module and the native-image driver, which no registry serves), on this machine's Temurin 25.
# The home is cached outside the clone, keyed by every input (these scripts, the sources' checksums, the JDK), in
# $WARDEN_NATIVE_CACHE (default ~/.cache/warden-native): a second run prints the cached home at once. Cold 3.5 minutes
# on 2 cores (measured), and 1.5 GB of sources and build output under the cache's work dir (removed once built).
# Needs root for apt (the OpenJDK source and its build dependencies). Prints the home's path last.
# usage: build-native-home.sh   (then: ./mvnw verify -Pnative -Dquarkus.native.graalvm-home=<that path>)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
jdk=${JAVA_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}
peer=${GRAAL_PARTS:-$root/../shared/peers/graal-vm-25.0.2-native-parts.tar.gz}
peer_sha256=9b4df28d074c35fbd1828d29a7c8afd44515843f22979f8cdd28aaf30f076fd9
svm=25.0.2 openjdk=26.0.2.1+1 openjdk_debian=26.0.2.1+1-1
# The orig tarball as the suites served it on 2026-12-02 (apt checks it against their signed Release files too).
openjdk_sha256=b9a893567232edf475e1511ce2de897a00bc3d775f2e46269f492164150f0d76

if [ ! -f "$peer" ]; then
  echo "no $peer: the GraalVM parts no registry serves (set GRAAL_PARTS to where the tarball is)" >&2
  exit 1
fi
echo "$peer_sha256  $peer" | sha256sum -c --quiet -
key=$( { cat "$here"/build-native-home.sh "$here"/*.py; echo "$peer_sha256 $svm $openjdk_debian"; cat "$jdk/release"; } \
  | sha256sum | cut -c1-16)
cache=${WARDEN_NATIVE_CACHE:-$HOME/.cache/warden-native}
home=$cache/graalvm-home-$key
if [ -x "$home/bin/native-image" ] && [ -f "$home/.complete" ]; then
  echo "$home"
  exit 0
fi
work=$cache/work-$key
# What an interrupted build left (one build at a time), and homes of other inputs: each is 360 MB. (On a new machine
# the cache does not exist yet: made first, or find fails.)
mkdir -p "$cache"
rm -rf "$cache"/work-* && find "$cache" -maxdepth 1 -name 'graalvm-home-*' ! -name "graalvm-home-$key" -exec rm -rf {} +
mkdir -p "$work/src"
started=$SECONDS
step() { printf '== native home at %ds: %s\n' $((SECONDS - started)) "$*" >&2; }

step "OpenJDK $openjdk's source, from the Debian mirror apt uses here (a private sources list of deb-src lines)"
packages=(autoconf make gcc g++ zip unzip file binutils libasound2-dev libcups2-dev libxrandr-dev libxtst-dev libxi-dev
  libfontconfig-dev libfreetype-dev zlib1g-dev)
missing=(); for p in "${packages[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
fi
mirror=$(apt-cache policy 2>/dev/null | grep -oE 'https?://[^ ]+/debian ' | head -1 | tr -d ' ' || true)
[ -n "$mirror" ] || { echo "apt knows no Debian mirror (apt-cache policy)" >&2; exit 1; }
mkdir -p "$work/apt/lists/partial"
# openjdk-26 is in testing (forky) and unstable (sid), not in trixie; whichever still has the pinned version serves it.
printf 'deb-src %s %s main\n' "$mirror" forky "$mirror" sid > "$work/apt/sources.list"
apt_private=(-o Dir::Etc::SourceList="$work/apt/sources.list" -o Dir::Etc::SourceParts=/nonexistent
  -o Dir::State::Lists="$work/apt/lists" -o Debug::NoLocking=1)
apt-get "${apt_private[@]}" update -qq >&2
(cd "$work/src" && apt-get "${apt_private[@]}" source --download-only "openjdk-26=$openjdk_debian" >&2)
orig=$work/src/openjdk-26_$openjdk.orig.tar.xz
echo "$openjdk_sha256  $orig" | sha256sum -c --quiet -
tar -xJf "$orig" -C "$work/src"
jsrc=$work/src/openjdk-26-$openjdk

step "the JDK's static libraries (configure, patch to JDK 25's ABI, build only those a native image links)"
python3 "$here/patch-jdk25-abi.py" "$jsrc"
(cd "$jsrc" && bash configure --with-boot-jdk="$jdk" --disable-warnings-as-errors --with-debug-level=release \
  --enable-headless-only --with-zlib=system --with-jobs="$(nproc)" --with-version-opt=warden \
  --with-native-debug-symbols=none --disable-precompiled-headers > "$work/configure.log" 2>&1) \
  || { tail -30 "$work/configure.log" >&2; exit 1; }
modules="java.base jdk.net java.management jdk.management java.prefs jdk.sctp java.security.jgss jdk.crypto.cryptoki"
(cd "$jsrc" && make JOBS="$(nproc)" LOG=warn $(for m in $modules; do echo "$m-static-libs"; done) >&2)
mkdir -p "$work/static-libs"
find "$jsrc/build/linux-x86_64-server-release/support/native" -path '*/static/*.a' -exec cp {} "$work/static-libs/" \;

step "GraalVM $svm's parts: the builder jars from Maven Central, the sources no registry serves"
mkdir -p "$work/graal-src" "$work/builder"
tar -xzf "$peer" -C "$work/graal-src" --strip-components=1
cat > "$work/builder/pom.xml" <<POM
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>dev.warden</groupId><artifactId>native-image-builder</artifactId><version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency><groupId>org.graalvm.nativeimage</groupId><artifactId>svm</artifactId><version>$svm</version></dependency>
  </dependencies>
</project>
POM
JAVA_HOME=$jdk "$root/mvnw" -B -q -f "$work/builder/pom.xml" dependency:copy-dependencies -DoutputDirectory="$work/builder/jars" >&2
jars=$work/builder/jars parts=$work/parts
src=$work/graal-src/substratevm/src
mkdir -p "$parts"

step "GraalVM's annotation processors"
out=$work/java/processors && mkdir -p "$out/graal" "$out/svm"
find "$work/graal-src/compiler/src/jdk.graal.compiler.processor/src" -name '*.java' > "$out/graal.list"
"$jdk/bin/javac" -nowarn -proc:none -d "$out/graal" @"$out/graal.list"
cp -r "$work/graal-src/compiler/src/jdk.graal.compiler.processor/src/META-INF" "$out/graal/"
"$jdk/bin/jar" cf "$parts/graal-processor.jar" -C "$out/graal" .
find "$src/com.oracle.svm.processor/src" -name '*.java' > "$out/svm.list"
"$jdk/bin/javac" -nowarn -proc:none -cp "$parts/graal-processor.jar" -d "$out/svm" @"$out/svm.list"
cp -r "$src/com.oracle.svm.processor/src/META-INF" "$out/svm/"
"$jdk/bin/jar" cf "$parts/svm-processor.jar" -C "$out/svm" .

step "SubstrateVM's C libraries (the flags of substratevm/mx.substratevm/suite.py)"
c=$work/c && mkdir -p "$c/chelper" "$c/jvm" "$c/container" "$c/out"
include="-I$jdk/include -I$jdk/include/linux"
flags="-g -gdwarf-5 -fPIC -O2 -ffunction-sections -fdata-sections -fvisibility=hidden -D_FORTIFY_SOURCE=0"
for f in "$src"/com.oracle.svm.native.libchelper/src/*.c; do
  gcc $flags -D_LITTLE_ENDIAN -I"$src/com.oracle.svm.native.libchelper/include" -c "$f" -o "$c/chelper/$(basename "${f%.c}").o"
done
ar rcs "$c/out/liblibchelper.a" "$c"/chelper/*.o
python3 "$here/jvm-fallbacks.py" "$work/static-libs" "$src/com.oracle.svm.native.jvm.posix/src/JvmFuncs.c" \
  "$c/jvm/JvmFuncsFallbacks.c" >&2
gcc $flags -D_GNU_SOURCE $include -c "$src/com.oracle.svm.native.jvm.posix/src/JvmFuncs.c" -o "$c/jvm/JvmFuncs.o"
gcc $flags -D_GNU_SOURCE $include -w -c "$c/jvm/JvmFuncsFallbacks.c" -o "$c/jvm/JvmFuncsFallbacks.o"
ar rcs "$c/out/libjvm.a" "$c"/jvm/*.o
container=$src/com.oracle.svm.native.libcontainer
cxxflags="-O2 -fno-rtti -fno-exceptions -fvisibility=hidden -fPIC -DNATIVE_IMAGE -DLINUX -DINCLUDE_SUFFIX_COMPILER=_gcc
 -I$container/src/java.base/share/native/include -I$container/src/java.base/unix/native/include -I$container/src/hotspot
 -I$container/src/hotspot/share -I$container/src/hotspot/os/linux -I$container/src/hotspot/os/posix
 -I$container/src/hotspot/os/posix/include -I$container/src/svm -I$container/src/svm/share -std=c++14
 -D__STDC_FORMAT_MACROS -D__STDC_LIMIT_MACROS -D__STDC_CONSTANT_MACROS"
i=0
for f in $(cd "$container" && find src -name '*.cpp' -o -name '*.c'); do
  i=$((i + 1)); g++ $cxxflags -c "$container/$f" -o "$c/container/$i-$(basename "$f").o"
done
ar rcs "$c/out/libsvm_container.a" "$c"/container/*.o
gcc -g -O2 -Wall -fPIC -shared $include "$src"/com.oracle.svm.native.reporterchelper/src/*.c -o "$c/out/libreporterchelper.so"

step "svm-foreign (FFM support) and the native-image driver, the two modules Maven Central does not serve"
out=$work/java && module_path=$(ls "$jars"/*.jar | grep -v "/compiler-$svm" | tr '\n' ':') compiler=$jars/compiler-$svm.jar
processors=$parts/graal-processor.jar:$parts/svm-processor.jar
builder_modules=org.graalvm.nativeimage.builder,org.graalvm.nativeimage.pointsto,org.graalvm.nativeimage.objectfile,org.graalvm.nativeimage.base,org.graalvm.nativeimage.configure,org.graalvm.nativeimage.foreign,org.graalvm.nativeimage.driver,jdk.graal.compiler,org.graalvm.truffle.compiler,org.graalvm.espresso.shared.svm,org.graalvm.nativeimage.shaded.capnproto
# Every package of every system module exported to the builder's modules: what suite.py's requiresConcealed amount to.
"$jdk/bin/java" --list-modules | sed 's/@.*//' | while read -r m; do
  "$jdk/bin/java" --describe-module "$m" 2>/dev/null \
    | awk '$1=="contains"||$1=="exports"||$1=="qualified"{print ($1=="qualified")?$3:$2}' | sort -u \
    | sed "s|^|--add-exports=$m/|;s|\$|=$builder_modules|"
done | sort -u > "$out/exports.args"
compile_module() { # name module-info extra-exports processor-flags sources...
  local name=$1 info=$2 exports=$3 proc=$4; shift 4
  local d=$out/$name; rm -rf "$d"; mkdir -p "$d/classes" "$d/gen"
  { find "$@" -name '*.java'; echo "$info"; } > "$d/sources.list"
  "$jdk/bin/javac" -nowarn -encoding UTF-8 --upgrade-module-path "$compiler" --module-path "$module_path" $proc -s "$d/gen" \
    -d "$d/classes" $exports @"$out/exports.args" -Xlint:none @"$d/sources.list" 2>&1 | { grep -v '^Note:' || true; } >&2
  [ -f "$d/classes/module-info.class" ] || { echo "compiling $name failed" >&2; exit 1; }
}
foreign_exports=""
for p in jdk.internal.misc jdk.internal.util jdk.internal.foreign jdk.internal.foreign.abi jdk.internal.foreign.abi.x64 \
  jdk.internal.foreign.abi.x64.sysv jdk.internal.foreign.abi.x64.windows jdk.internal.foreign.abi.aarch64 \
  jdk.internal.foreign.abi.aarch64.macos jdk.internal.foreign.abi.aarch64.linux jdk.internal.foreign.layout \
  jdk.internal.vm.annotation; do
  foreign_exports="$foreign_exports --add-exports java.base/$p=org.graalvm.nativeimage.foreign"
done
for p in jdk.vm.ci.meta jdk.vm.ci.code jdk.vm.ci.amd64 jdk.vm.ci.aarch64; do
  foreign_exports="$foreign_exports --add-exports jdk.internal.vm.ci/$p=org.graalvm.nativeimage.foreign"
done
foreign_info() { mkdir -p "$out/info-foreign"; cat > "$out/info-foreign/module-info.java" <<INFO
module org.graalvm.nativeimage.foreign {
  requires org.graalvm.nativeimage.builder;
  requires org.graalvm.nativeimage.configure;
  requires org.graalvm.collections;
  requires jdk.graal.compiler;
  requires jdk.internal.vm.ci;
  exports com.oracle.svm.core.foreign to org.graalvm.nativeimage.builder;
  exports com.oracle.svm.hosted.foreign to org.graalvm.nativeimage.builder;
  opens com.oracle.svm.core.foreign to org.graalvm.nativeimage.builder;
  $1
}
INFO
}
foreign_sources="$src/com.oracle.svm.core.foreign/src $src/com.oracle.svm.hosted.foreign/src"
# Twice: the processors' first pass names the services it provides, which its module-info must then declare.
foreign_info ""
compile_module foreign-first "$out/info-foreign/module-info.java" "$foreign_exports" "--processor-path $processors" $foreign_sources
foreign_info "$(python3 "$here/provides.py" "$out/foreign-first/classes")"
cp -r "$out/foreign-first/gen" "$out/foreign-gen"
compile_module foreign "$out/info-foreign/module-info.java" "$foreign_exports" "-proc:none" $foreign_sources "$out/foreign-gen"
"$jdk/bin/jar" cf "$parts/svm-foreign.jar" -C "$out/foreign/classes" .
mkdir -p "$out/info-driver"
cat > "$out/info-driver/module-info.java" <<INFO
module org.graalvm.nativeimage.driver {
  exports com.oracle.svm.driver;
  exports com.oracle.svm.driver.metainf;
  uses jdk.graal.compiler.options.OptionDescriptors;
  requires org.graalvm.nativeimage.builder;
  requires org.graalvm.nativeimage.configure;
  requires java.management;
  requires jdk.management;
  requires jdk.graal.compiler;
  requires org.graalvm.collections;
  requires jdk.jfr;
}
INFO
compile_module driver "$out/info-driver/module-info.java" \
  "--add-exports java.base/jdk.internal.jimage=org.graalvm.nativeimage.driver --add-exports jdk.jfr/jdk.jfr.internal=org.graalvm.nativeimage.driver" \
  "--processor-path $processors" "$src/com.oracle.svm.driver/src" "$src/com.oracle.svm.driver.launcher/src"
driver=$out/driver/classes
cp -r "$src/com.oracle.svm.driver/resources/." "$driver/"
cp -r "$src/com.oracle.svm.driver.launcher/resources/." "$driver/"
# The builder's JVM flags (what mx's svm-compiler-flags-builder writes): JVMCI on, and the exports kept to the modules
# the builder's boot layer resolves.
"$jdk/bin/java" -XX:+UnlockExperimentalVMOptions -XX:+EnableJVMCI --upgrade-module-path "$compiler" \
  --module-path "$module_path$parts/svm-foreign.jar" --add-modules ALL-DEFAULT --show-module-resolution --dry-run \
  -m org.graalvm.nativeimage.builder/com.oracle.svm.hosted.NativeImageGeneratorRunner > "$out/builder-resolution.txt" 2>&1 || true
python3 "$here/resolve-modules.py" < "$out/builder-resolution.txt" > "$out/builder-modules.txt"
python3 "$here/exports-for.py" "$out/exports.args" "$out/builder-modules.txt" "$out/builder-exports.args"
{ printf '%s\n' -XX:+UnlockExperimentalVMOptions -XX:+EnableJVMCI -Dtruffle.TrustAllTruffleRuntimeProviders=true \
    -Dtruffle.TruffleRuntime=com.oracle.truffle.api.impl.DefaultTruffleRuntime -Dgraalvm.ForcePolyglotInvalid=true \
    -Dgraalvm.locatorDisabled=true -Dsubstratevm.HostLibC=glibc
  cat "$out/builder-exports.args"; } > "$driver/graal-compiler-flags-21.config"
cp "$driver/graal-compiler-flags-21.config" "$driver/graal-compiler-flags-25.config"
printf '21\n25' > "$driver/graal-compiler-flags-versions.config"
"$jdk/bin/jar" cf "$parts/svm-driver.jar" -C "$driver" .

step "the home: this JDK, the static and C libraries, the builder's jars and a native-image launcher"
building=$work/graalvm-home
mkdir -p "$building" && cp -a "$jdk/." "$building/"
libs=$building/lib/svm/clibraries/linux-amd64
mkdir -p "$building/lib/static/linux-amd64/glibc" "$libs/glibc" "$libs/include" "$building/lib/svm/builder/lib" \
  "$building/lib/jvmci" "$building/lib/truffle" "$building/lib/graalvm"
cp "$work"/static-libs/*.a "$building/lib/static/linux-amd64/glibc/"
cp "$c"/out/*.a "$libs/glibc/"
cp "$src"/com.oracle.svm.native.libchelper/include/*.h "$libs/include/"
cp "$c/out/libreporterchelper.so" "$building/lib/svm/builder/lib/"
for a in svm pointsto objectfile native-image-base svm-capnproto-runtime svm-configure espresso-svm; do
  cp "$jars/$a-$svm.jar" "$building/lib/svm/builder/$a.jar"
done
cp "$parts/svm-foreign.jar" "$building/lib/svm/builder/svm-foreign.jar"
cp "$jars/compiler-$svm.jar" "$building/lib/jvmci/graal.jar"
for a in word collections nativeimage nativeimage-libgraal; do cp "$jars/$a-$svm.jar" "$building/lib/jvmci/$a.jar"; done
cp "$jars/truffle-compiler-$svm.jar" "$building/lib/truffle/truffle-compiler.jar"
cp "$parts/svm-driver.jar" "$building/lib/graalvm/svm-driver.jar"
cat > "$building/bin/native-image" <<'LAUNCHER'
#!/usr/bin/env bash
# native-image: GraalVM 25.0.2's driver (com.oracle.svm.driver.NativeImage) on this home's JDK.
home=$(cd "$(dirname "$(readlink -f "$0")")/.." && pwd)
path=$home/lib/graalvm/svm-driver.jar
for jar in "$home"/lib/svm/builder/*.jar "$home"/lib/jvmci/{word,collections,nativeimage,nativeimage-libgraal}.jar \
  "$home/lib/truffle/truffle-compiler.jar"; do path=$path:$jar; done
exec "$home/bin/java" -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Xshare:auto -XX:+UnlockExperimentalVMOptions \
  -XX:+EnableJVMCI -XX:-UseJVMCICompiler --upgrade-module-path "$home/lib/jvmci/graal.jar" --module-path "$path" \
  @"$home/lib/graalvm/exports.args" -Dnative-image.root="$home" -Dorg.graalvm.version=25.0.2 \
  -Dorg.graalvm.vendorversion="GraalVM CE 25.0.2+10.1" -m org.graalvm.nativeimage.driver/com.oracle.svm.driver.NativeImage "$@"
LAUNCHER
chmod +x "$building/bin/native-image"
driver_path=$building/lib/graalvm/svm-driver.jar
for jar in "$building"/lib/svm/builder/*.jar "$building"/lib/jvmci/{word,collections,nativeimage,nativeimage-libgraal}.jar \
  "$building/lib/truffle/truffle-compiler.jar"; do driver_path=$driver_path:$jar; done
"$building/bin/java" -XX:+UnlockExperimentalVMOptions -XX:+EnableJVMCI --upgrade-module-path "$building/lib/jvmci/graal.jar" \
  --module-path "$driver_path" --show-module-resolution --dry-run -m org.graalvm.nativeimage.driver/com.oracle.svm.driver.NativeImage \
  > "$work/driver-resolution.txt" 2>&1 || true
python3 "$here/resolve-modules.py" < "$work/driver-resolution.txt" > "$work/driver-modules.txt"
python3 "$here/exports-for.py" "$out/exports.args" "$work/driver-modules.txt" "$building/lib/graalvm/exports.args"
"$building/bin/native-image" --version >&2
touch "$building/.complete"
rm -rf "$home" && mv "$building" "$home"
rm -rf "$work"
step "done: $home ($(du -sh "$home" | cut -f1))"
echo "$home"
