#!/usr/bin/python3
"""What of build_aar.sh runs without an NDK (meson test java_aar).

  test_aar.py --script build_aar.sh --jni LIBKILN_JNI --workdir DIR
              [--standin-build-root DIR2]

1. Without an NDK the script fails clearly: exit 2 and a message naming
   what is missing (no ANDROID_NDK_HOME; a directory that does not exist; a
   directory that is no NDK), having built nothing.
2. With the host libkiln_jni standing in for both Android ABIs
   (--jni-lib), it assembles the AAR; checked: exactly the entries an AAR
   has (AndroidManifest.xml, classes.jar, R.txt, proguard.txt,
   jni/arm64-v8a/ and jni/armeabi-v7a/libkiln_jni.so), the libraries byte
   for byte, the manifest (package ai.kiln, minSdkVersion 24), classes.jar
   holding every ai.kiln class of src/main/java as Java 8 bytecode (major
   52) calling Java 8's Buffer methods, and the consumer rules keeping what
   the JNI library binds by name.
3. With --standin-build-root: the script's cross-build path with a stand-in
   NDK, a folder laid out like one whose clang runs Debian's aarch64 and
   armhf cross gcc (glibc, not bionic) and whose llvm-ar/llvm-strip are
   LLVM 15's: meson setup with tools/cross/android-<abi>.ini and the
   generated ndk.ini, -Djava=enabled finding jni.h as it does on Android,
   ninja, strip, assembly; the AAR's libraries must be stripped AArch64 and
   ARM shared objects exporting only the JNI entry points. (Incremental in
   DIR2.) The real NDK's clang, bionic and a device are not exercised.
"""
import argparse
import io
import os
import shutil
import struct
import subprocess
import sys
import xml.etree.ElementTree as ET
import zipfile

ANDROID_NS = '{http://schemas.android.com/apk/res/android}'


def run_script(args, extra, env_ndk=None):
    env = {k: v for k, v in os.environ.items() if not k.startswith('ANDROID_NDK')}
    if env_ndk is not None:
        env['ANDROID_NDK_HOME'] = env_ndk
    cmd = ['bash', args.script] + extra
    print('$ ' + ('ANDROID_NDK_HOME=%s ' % env_ndk if env_ndk is not None else '') + ' '.join(cmd))
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=240)
    print(proc.stdout + proc.stderr, end='')
    return proc


def expect_no_ndk(args, extra, env_ndk, message):
    build_root = os.path.join(args.workdir, 'no-ndk-build')
    proc = run_script(args, extra + ['--build-root', build_root,
                                     '--out', os.path.join(args.workdir, 'none.aar')], env_ndk)
    if proc.returncode != 2 or message not in proc.stderr:
        raise SystemExit('FAIL: expected exit 2 and "%s", got exit %d' % (message, proc.returncode))
    if os.path.exists(build_root) or os.path.exists(os.path.join(args.workdir, 'none.aar')):
        raise SystemExit('FAIL: the script built something without an NDK')
    print('CHECK no NDK (%s): PASS' % message)


def class_major(data):
    magic, _minor, major = struct.unpack('>IHH', data[:8])
    if magic != 0xCAFEBABE:
        raise SystemExit('FAIL: not a class file')
    return major


def method_refs(data):
    """The (class, name, descriptor) of every method a class file calls (its constant pool)."""
    count = struct.unpack('>H', data[8:10])[0]
    entries, at, i = {}, 10, 1
    sizes = {3: 4, 4: 4, 5: 8, 6: 8, 7: 2, 8: 2, 9: 4, 10: 4, 11: 4, 12: 4, 15: 3, 16: 2,
             17: 4, 18: 4, 19: 2, 20: 2}
    while i < count:
        tag = data[at]
        if tag == 1:
            length = struct.unpack('>H', data[at + 1:at + 3])[0]
            entries[i] = (1, data[at + 3:at + 3 + length].decode('utf-8', 'replace'))
            at += 3 + length
        else:
            entries[i] = (tag, data[at + 1:at + 1 + sizes[tag]])
            at += 1 + sizes[tag]
        i += 2 if tag in (5, 6) else 1
    def utf8(index):
        return entries[index][1]
    refs = []
    for tag, body in entries.values():
        if tag in (10, 11):  # Methodref, InterfaceMethodref
            class_index, nat_index = struct.unpack('>HH', body)
            name_index, desc_index = struct.unpack('>HH', entries[nat_index][1])
            refs.append((utf8(struct.unpack('>H', entries[class_index][1])[0]),
                         utf8(name_index), utf8(desc_index)))
    return refs


def check_aar(args, aar):
    java_root = os.path.dirname(os.path.dirname(os.path.abspath(args.script)))  # bindings/java
    with zipfile.ZipFile(aar) as z:
        names = sorted(n for n in z.namelist() if not n.endswith('/'))
        want = sorted(['AndroidManifest.xml', 'classes.jar', 'R.txt', 'proguard.txt',
                       'jni/arm64-v8a/libkiln_jni.so', 'jni/armeabi-v7a/libkiln_jni.so'])
        if names != want:
            raise SystemExit('FAIL: AAR entries %s, want %s' % (names, want))
        host = open(args.jni, 'rb').read()
        for abi in ('arm64-v8a', 'armeabi-v7a'):
            if z.read('jni/%s/libkiln_jni.so' % abi) != host:
                raise SystemExit('FAIL: jni/%s/libkiln_jni.so is not the library given' % abi)
        manifest = ET.fromstring(z.read('AndroidManifest.xml'))
        sdk = manifest.find('uses-sdk')
        if manifest.get('package') != 'ai.kiln' or sdk is None or \
                sdk.get(ANDROID_NS + 'minSdkVersion') != '24':
            raise SystemExit('FAIL: AndroidManifest.xml: package %r, uses-sdk %r'
                             % (manifest.get('package'), sdk is not None and sdk.attrib))
        rules = z.read('proguard.txt').decode()
        for needed in ('class ai.kiln.Native', 'native <methods>', 'class ai.kiln.KilnException',
                       '<init>(int, byte[], byte[])'):
            if needed not in rules:
                raise SystemExit('FAIL: proguard.txt does not keep %r' % needed)
        classes = zipfile.ZipFile(io.BytesIO(z.read('classes.jar')))
        class_files = {n: classes.read(n) for n in classes.namelist() if n.endswith('.class')}
    sources = os.listdir(os.path.join(java_root, 'src', 'main', 'java', 'ai', 'kiln'))
    want_classes = {'ai/kiln/' + s[:-5] + '.class' for s in sources if s.endswith('.java')}
    if not want_classes or want_classes - set(class_files):
        raise SystemExit('FAIL: classes.jar lacks %s' % sorted(want_classes - set(class_files)))
    stray = [n for n in class_files if not n.startswith('ai/kiln/')]
    if stray:
        raise SystemExit('FAIL: classes.jar holds classes outside ai.kiln: %s' % stray)
    majors = {n: class_major(d) for n, d in class_files.items()}
    if set(majors.values()) != {52}:
        raise SystemExit('FAIL: classes.jar is not Java 8 bytecode: %s' % majors)
    # Java 8's Buffer signatures, never JDK 9's covariant ByteBuffer overrides
    # (NoSuchMethodError on Android releases before them).
    covariant = sorted('%s: ByteBuffer.%s%s' % (n, name, desc)
                       for n, d in class_files.items() for cls, name, desc in method_refs(d)
                       if cls == 'java/nio/ByteBuffer' and desc.endswith(')Ljava/nio/ByteBuffer;')
                       and name in ('position', 'limit', 'mark', 'reset', 'clear', 'flip', 'rewind'))
    if covariant:
        raise SystemExit('FAIL: JDK 9+ ByteBuffer signatures: %s' % covariant)
    buffer_calls = sum(1 for d in class_files.values() for cls, name, desc in method_refs(d)
                       if cls == 'java/nio/ByteBuffer' and name == 'position')
    if buffer_calls == 0:
        raise SystemExit('FAIL: no ByteBuffer.position call found: the constant pool reader is broken')
    print('CHECK AAR layout: PASS (%d entries, %d classes, Java 8 bytecode, %d-byte libraries)'
          % (len(names), len(class_files), len(host)))


STANDIN_CLANG = """#!/bin/sh
# A stand-in for the NDK's clang (bindings/java/android/test_aar.py): Debian's
# cross gcc for the --target the cross file passes, with the JDK's jni.h.
tool=
for a in "$@"; do
  case "$a" in
    --target=aarch64-linux-android*) tool=aarch64-linux-gnu ;;
    --target=armv7a-linux-androideabi*) tool=arm-linux-gnueabihf ;;
  esac
done
[ -n "$tool" ] || { echo "stand-in clang: no known --target in: $*" >&2; exit 1; }
compiler=gcc
case "$0" in *++) compiler=g++ ;; esac
for a in "$@"; do
  shift
  case "$a" in --target=*) ;; *) set -- "$@" "$a" ;; esac
done
exec "$tool-$compiler" -isystem '@JNI@' -isystem '@JNI@/linux' "$@"
"""

# ELF e_machine and class of each ABI.
ABI_ELF = {'arm64-v8a': (183, 2), 'armeabi-v7a': (40, 1)}


def make_standin_ndk(path):
    """A folder laid out like an NDK whose tools are Debian's cross gcc and LLVM 15's."""
    tools = {'aarch64-linux-gnu-gcc', 'arm-linux-gnueabihf-gcc', 'llvm-ar-15', 'llvm-strip-15',
             'llvm-nm-15', 'javac'}
    missing = [t for t in sorted(tools) if not shutil.which(t)]
    if missing:
        raise SystemExit('FAIL: the stand-in NDK needs %s (tools/setup.sh installs them)' % missing)
    jni = os.path.join(os.path.dirname(os.path.dirname(os.path.realpath(shutil.which('javac')))),
                       'include')
    bin_dir = os.path.join(path, 'toolchains', 'llvm', 'prebuilt', 'linux-x86_64', 'bin')
    os.makedirs(bin_dir, exist_ok=True)
    for name in ('clang', 'clang++'):
        with open(os.path.join(bin_dir, name), 'w') as f:
            f.write(STANDIN_CLANG.replace('@JNI@', jni))
        os.chmod(os.path.join(bin_dir, name), 0o755)
    for name in ('llvm-ar', 'llvm-strip'):
        link = os.path.join(bin_dir, name)
        if not os.path.lexists(link):
            os.symlink(shutil.which(name + '-15'), link)


def check_standin(args):
    ndk = os.path.join(args.standin_build_root, 'ndk')
    make_standin_ndk(ndk)
    aar = os.path.join(args.workdir, 'kiln-standin.aar')
    proc = run_script(args, ['--build-root', args.standin_build_root, '--out', aar, '--jobs', '2'],
                      env_ndk=ndk)
    if proc.returncode != 0:
        raise SystemExit('FAIL: build_aar.sh with the stand-in NDK exited %d' % proc.returncode)
    with zipfile.ZipFile(aar) as z:
        for abi, (machine, elf_class) in ABI_ELF.items():
            lib = z.read('jni/%s/libkiln_jni.so' % abi)
            got = (struct.unpack('<H', lib[18:20])[0], lib[4])
            if lib[:4] != b'\x7fELF' or got != (machine, elf_class) or struct.unpack('<H', lib[16:18])[0] != 3:
                raise SystemExit('FAIL: jni/%s/libkiln_jni.so is not an ET_DYN of e_machine %d, class %d: %s'
                                 % (abi, machine, elf_class, got))
            if b'.symtab' in lib:
                raise SystemExit('FAIL: jni/%s/libkiln_jni.so is not stripped' % abi)
            path = os.path.join(args.workdir, abi + '.so')
            with open(path, 'wb') as f:
                f.write(lib)
            nm = subprocess.run(['llvm-nm-15', '-D', '--defined-only', path], capture_output=True,
                                text=True, timeout=60)
            exported = [line.split()[-1] for line in nm.stdout.splitlines() if line.strip()]
            stray = [s for s in exported if not (s.startswith('Java_ai_kiln_') or s.startswith('JNI_On'))]
            if nm.returncode or stray or len(exported) < 20:
                raise SystemExit('FAIL: jni/%s/libkiln_jni.so exports %s' % (abi, stray or exported))
    print('CHECK stand-in NDK cross-build: PASS (arm64-v8a: AArch64, armeabi-v7a: ARM; stripped; '
          'only JNI symbols exported)')


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--script', required=True)
    parser.add_argument('--jni', required=True)
    parser.add_argument('--workdir', required=True)
    parser.add_argument('--standin-build-root')
    args = parser.parse_args()
    shutil.rmtree(args.workdir, ignore_errors=True)
    os.makedirs(args.workdir)

    for default in ('/opt/android-ndk', '/usr/lib/android-ndk'):
        if os.path.exists(default):
            print('note: %s exists, but build_aar.sh only uses ANDROID_NDK_HOME/--ndk' % default)
    expect_no_ndk(args, [], None, 'no Android NDK: set ANDROID_NDK_HOME')
    expect_no_ndk(args, [], os.path.join(args.workdir, 'missing-ndk'), 'no such directory')
    fake = os.path.join(args.workdir, 'not-an-ndk')
    os.makedirs(os.path.join(fake, 'toolchains'))
    expect_no_ndk(args, ['--ndk', fake], None, 'is not an NDK r23+')
    expect_no_ndk(args, ['--jni-lib', 'mips=' + args.jni], None, "unknown ABI 'mips'")

    aar = os.path.join(args.workdir, 'kiln.aar')
    proc = run_script(args, ['--jni-lib', 'arm64-v8a=' + args.jni,
                             '--jni-lib', 'armeabi-v7a=' + args.jni, '--out', aar])
    if proc.returncode != 0:
        raise SystemExit('FAIL: build_aar.sh --jni-lib exited %d' % proc.returncode)
    check_aar(args, aar)
    if args.standin_build_root:
        check_standin(args)
    print('java_aar: PASS (%s; the real NDK was not run)'
          % ('assembly and the cross-build path with a stand-in NDK' if args.standin_build_root
             else 'assembly only'))
    return 0


if __name__ == '__main__':
    sys.exit(main())
