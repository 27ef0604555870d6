#!/usr/bin/python3
"""Compiles the binding's Java sources into a jar (meson's custom target kiln.jar).

  build_jar.py --javac JAVAC --jar JAR --release N --out OUT.jar --classes DIR SOURCE.java...

meson's own jar() expects one class file per source at the source's path,
which packages in src/main/java/ai/kiln do not give; this compiles them all
at once with javac -d and packs the class tree.
"""
import argparse
import os
import shutil
import subprocess
import sys


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('--javac', required=True)
    parser.add_argument('--jar', required=True)
    parser.add_argument('--release', required=True)
    parser.add_argument('--out', required=True)
    parser.add_argument('--classes', required=True)
    parser.add_argument('sources', nargs='+')
    args = parser.parse_args()
    shutil.rmtree(args.classes, ignore_errors=True)
    os.makedirs(args.classes)
    subprocess.run([args.javac, '--release', args.release, '-Xlint:all', '-Werror',
                    '-d', args.classes] + args.sources, check=True)
    if os.path.exists(args.out):
        os.remove(args.out)
    subprocess.run([args.jar, '--create', '--file', args.out, '-C', args.classes, '.'], check=True)
    return 0


if __name__ == '__main__':
    try:
        sys.exit(main())
    except subprocess.CalledProcessError as e:
        sys.exit('build_jar.py: %s failed (exit %d)' % (e.cmd[0], e.returncode))
