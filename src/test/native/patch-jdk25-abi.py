#!/usr/bin/env python3
"""Makes the OpenJDK 26.0.2.1 native sources match the JDK 25 Java ABI where it changed, so its static libraries
link into a native image built on a JDK 25. Among the natives of libjava, libnio, libnet, libzip, libextnet,
libmanagement* and libprefs that SubstrateVM does not substitute, one changed: UnixNativeDispatcher.fstatat0
(JDK 25: void, throws UnixException; JDK 26: returns the errno). Idempotent.
usage: patch-jdk25-abi.py JDK_SOURCE_DIR"""
import sys

root = sys.argv[1]
c = root + '/src/java.base/unix/native/libnio/fs/UnixNativeDispatcher.c'
j = root + '/src/java.base/unix/classes/sun/nio/fs/UnixNativeDispatcher.java'


def replace(text, old, new, path):
    if old not in text:
        sys.exit('%s: the JDK 26 code this patch expects is not there:\n%s' % (path, old))
    return text.replace(old, new, 1)


s = open(c).read()
if 'fstatat0_errno' not in s:
    s = replace(s, 'JNIEXPORT jint JNICALL\nJava_sun_nio_fs_UnixNativeDispatcher_fstatat0(', 'static jint\nfstatat0_errno(', c)
    anchor = 'JNIEXPORT void JNICALL\nJava_sun_nio_fs_UnixNativeDispatcher_chmod0('
    s = replace(s, anchor, '''/* JDK 25 ABI: void fstatat0(int, long, int, UnixFileAttributes) throws UnixException */
JNIEXPORT void JNICALL
Java_sun_nio_fs_UnixNativeDispatcher_fstatat0(JNIEnv* env, jclass this, jint dfd,
    jlong pathAddress, jint flag, jobject attrs)
{
    jint err = fstatat0_errno(env, this, dfd, pathAddress, flag, attrs);
    if (err != 0 && !(*env)->ExceptionCheck(env)) {
        throwUnixException(env, err);
    }
}

''' + anchor, c)
    open(c, 'w').write(s)

s = open(j).read()
if 'native void fstatat0' not in s:
    s = replace(s, '''            int errno = fstatat0(dfd, buffer.address(), flag, attrs);
            if (errno != 0) {
                throw new UnixException(errno);
            }''', '''            fstatat0(dfd, buffer.address(), flag, attrs);''', j)
    s = replace(s, '''    private static native int fstatat0(int dfd, long pathAddress, int flag,
        UnixFileAttributes attrs);''', '''    private static native void fstatat0(int dfd, long pathAddress, int flag,
        UnixFileAttributes attrs) throws UnixException;''', j)
    s = replace(s, '''            return fstatat0(dfd, buffer.address(), flag, attrs);''',
                '''            try { fstatat0(dfd, buffer.address(), flag, attrs); return 0; }
            catch (UnixException e) { return e.errno(); }''', j)
    open(j, 'w').write(s)
