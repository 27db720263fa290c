#!/usr/bin/env python3
"""Writes JvmFuncsFallbacks.c as SubstrateVM's build (mx_substratevm.py) does: a stub for every JVM_* symbol the JDK
static libraries leave undefined and JvmFuncs.c does not implement (a stub aborts if it is ever called).
usage: jvm-fallbacks.py STATIC_LIBS_DIR JvmFuncs.c OUT.c"""
import glob
import subprocess
import sys

libdir, funcs, out = sys.argv[1:]
used = set()
for archive in glob.glob(libdir + '/*.a'):
    symbols = subprocess.run(['objdump', '--wide', '--syms', archive], capture_output=True, text=True, check=True)
    for line in symbols.stdout.splitlines():
        t = line.split()
        if len(t) > 2 and t[1] == '*UND*' and t[-1].startswith('JVM_'):
            used.add(t[-1])
implemented = set()
for line in open(funcs):
    t = line.split()
    if 'JNICALL' in t:
        i = t.index('JNICALL')
        if i + 1 < len(t) and t[i + 1].startswith('JVM_'):
            implemented.add(t[i + 1].split('(')[0].rstrip())
# The JVM_ functions that take no JNIEnv (their stub cannot call FatalError).
without_env = {'JVM_GC', 'JVM_ActiveProcessorCount', 'JVM_GetInterfaceVersion', 'JVM_GetManagement',
               'JVM_IsSupportedJNIVersion', 'JVM_MaxObjectInspectionAge', 'JVM_NativePath', 'JVM_ReleaseUTF',
               'JVM_SupportsCX8', 'JVM_BeforeHalt', 'JVM_Halt', 'JVM_LoadLibrary', 'JVM_UnloadLibrary',
               'JVM_FindLibraryEntry', 'JVM_FindSignal', 'JVM_RaiseSignal', 'JVM_RegisterSignal', 'JVM_FreeMemory',
               'JVM_MaxMemory', 'JVM_TotalMemory', 'JVM_RawMonitorCreate', 'JVM_RawMonitorDestroy',
               'JVM_RawMonitorEnter', 'JVM_RawMonitorExit'}
with open(out, 'w') as f:
    f.write('/* Fallbacks for the JVM_ functions the JDK static libraries use and JvmFuncs.c lacks. */\n\n'
            '#include <stdlib.h>\n#include <stdio.h>\n#include <jni.h>\n')
    for name in sorted(used - implemented):
        if name in without_env:
            f.write('\nJNIEXPORT void JNICALL %s() {\n    fprintf(stderr, "%s called:  Unimplemented\\n");\n'
                    '    abort();\n}\n' % (name, name))
        else:
            f.write('\nJNIEXPORT jobject JNICALL %s(JNIEnv *env) {\n'
                    '    (*env)->FatalError(env, "%s called:  Unimplemented");\n    return NULL;\n}\n' % (name, name))
print('JVM_ functions the static libraries use: %d; in JvmFuncs.c: %d; stubbed: %d'
      % (len(used), len(implemented & used), len(used - implemented)))
