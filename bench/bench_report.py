"""The Markdown report of bench/run_bench.py: machine, models, the timing tables
at each thread count, thread scaling, the int8 tables, the per-layer profile and
the Vulkan table."""

from typing import Dict, List, Optional

from bench_config import INT8_MODELS, MODELS, PROFILE_TOP


def section_head(title: str, result: Optional[Dict[str, object]], option: str, why: str = '%s') -> List[str]:
    """An optional section's heading, and when it was not run the line that says so, in a list that
    ends with an empty line: result None means skipped by OPTION; a result that is not 'available'
    was not run for its 'reason' (put into WHY)."""
    if result is None:
        return ['## ' + title, '', 'Not run (`%s`).' % option, '']
    if not result['available']:
        return ['## ' + title, '', 'Not run: %s.' % (why % result['reason']), '']
    return ['## ' + title, '']


def render_vulkan(vk: Dict[str, object], names) -> List[str]:
    L = section_head('Vulkan', vk, '--no-vulkan', 'no usable Vulkan device (%s)')
    if vk is None or not vk['available']:
        return L
    st = vk['settings']
    L.append('Shared-memory GPU tiles (`kilnc --vulkan-shared-memory`): %s.' % st.get('shared_memory', 'on'))
    L.append('')
    L.append('Device: **%s**. `kilnc --target=vulkan`, then `kiln bench --device vulkan --startup --warmup 1 '
             '--iterations %d` per model (fewer runs than on the CPU: software Vulkan is slow), cheapest model '
             'first while the %.0f s budget lasts; %.0f s in all. Median/min: of the %d timed runs. '
             '**Cold** start-up: a new process, the drivers\' shader caches in a new empty folder '
             '(`MESA_SHADER_CACHE_DIR`, `__GL_SHADER_DISK_CACHE_PATH`), no pipeline cache. **Warm**: a second load '
             'in the same process, seeded with the first session\'s pipeline cache (`vulkan_pipeline_cache`; its '
             'size in bytes is given) and with the shader cache the first load filled. Load -> first run: from the '
             'load call to the end of the first `kiln_session_run` (`kiln_session_get_load_stats`); first-run '
             'overhead: first run minus the median (shader compilation a driver defers to the first dispatch, '
             'first touch of memory). CPU: kiln at %d thread(s), the same load -> first run.' % (
                 vk['device'], st['iterations'], st['budget_s'], vk['wall_s'], st['iterations'],
                 next(iter(vk['models'].values()))['cpu_threads']))
    L.append('')
    L.append('| Model | Vulkan median ms | min ms | load -> first run, cold ms | pipeline creation, cold ms '
             '| first-run overhead ms | load -> first run, warm ms | pipeline creation, warm ms '
             '| pipeline cache | CPU median ms | CPU load -> first run ms |')
    L.append('|---|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|')
    for n in names:
        if n in vk['models']:
            r = vk['models'][n]
            c, w = r['cold'], r['warm']
            cache = '%s (%d B)' % (w.get('pipeline_cache', '?'), int(w.get('pipeline_cache_bytes', 0)))
            L.append('| %s | %s | %s | %.0f | %.1f | %.0f | %.0f | %.1f | %s | %s | %s |' % (
                MODELS[n][0], fmt_ms(r['median_ms']), fmt_ms(r['min_ms']), c['load_to_first_run_ms'],
                c['pipeline_create_ms'], c['first_run_ms'] - r['median_ms'], w['load_to_first_run_ms'],
                w['pipeline_create_ms'], cache, fmt_ms(r['cpu_median_ms']) if r['cpu_median_ms'] else '-',
                fmt_ms(r['cpu_load_to_first_run_ms']) if r.get('cpu_load_to_first_run_ms') else '-'))
        elif n in vk['failed']:
            L.append('| %s | failed: %s | | | | | | | | | |' % (MODELS[n][0], vk['failed'][n].replace('|', '/')))
        elif n in vk['skipped']:
            L.append('| %s | skipped (time budget) | | | | | | | | | |' % MODELS[n][0])
    L.append('')
    return L


def render_int8(int8, names, threads_list) -> List[str]:
    L = section_head('int8', int8, '--no-int8')
    if int8 is None or not int8['available']:
        return L
    peak = int8['peak']
    L.append('The models %s quantized by ONNX Runtime\'s quantizer (`tests/e2e/quantize_models.py quantize '
             '--variant %s`: QDQ, per-channel int8 weights, uint8 activations, MinMax calibration on seeded '
             'inputs), the same `.onnx` file compiled by kilnc and run by kiln, and run by ONNX Runtime (which '
             'fuses the QDQ pairs into its integer kernels), in the same alternating rounds as the float32 rows. '
             'kiln f32: the float32 rows above. GOP/s = 2 x MACs of the float model (its GFLOP above) / median '
             'time; %% of the measured int8 peak (bench/int8_peak.c, %s; measured with the FMA peak, the best '
             'measurement): %s.' % (
                 ', '.join(MODELS[n][0] for n in INT8_MODELS), int8['variant'],
                 peak[str(threads_list[0])]['isa'],
                 '; '.join('%d thread%s **%.1f GOP/s** (median of the %d measurements %.1f; 256-bit %.1f)' % (
                     t, '' if t == 1 else 's', peak[str(t)]['gops'], peak[str(t)]['measurements'],
                     peak[str(t)]['median_of_measurements'], peak[str(t)]['gops_256']) for t in threads_list)))
    L.append('')
    L.append('| Model | quantized ops | kilnc time (s) | Bundle (MB) |')
    L.append('|---|---|---:|---:|')
    for n in names:
        e = int8['models'].get(n)
        if e is None:
            continue
        ops = e.get('ops', {})
        q = ', '.join('%s x%d' % (k, ops[k]) for k in ('QuantizeLinear', 'DequantizeLinear') if k in ops)
        if 'kiln' in e:
            L.append('| %s | %s | %.1f | %.1f |' % (MODELS[n][0], q or '-', e['compile_s'], e['bundle_bytes'] / 1e6))
        else:
            L.append('| %s | %s | failed | |' % (MODELS[n][0], q or '-'))
    L.append('')
    for t in threads_list:
        g = int8['geomean'][str(t)]
        L.append('### int8, %d thread%s' % (t, '' if t == 1 else 's'))
        L.append('')
        L.append('| Model | kiln int8 median | kiln int8 min | ORT int8 median | ORT int8 min | kiln int8 / ORT int8 '
                 '(median) | (min) | kiln f32 median | kiln f32 / kiln int8 | kiln int8 GOP/s | kiln % int8 peak '
                 '| ORT int8 GOP/s | ORT % int8 peak |')
        L.append('|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|')
        for r in int8['summary']:
            if r['threads'] != t:
                continue
            if 'error' in r:
                L.append('| %s | error: %s | | | | | | %s | | | | | |' % (
                    MODELS[r['model']][0], r['error'].replace('|', '/'), fmt_ms(r['kiln_f32_median_ms'])))
                continue
            L.append('| %s | %s | %s | %s | %s | %.2f | %.2f | %s | %.2fx | %.1f | %.1f | %.1f | %.1f |' % (
                MODELS[r['model']][0], fmt_ms(r['kiln_int8_median_ms']), fmt_ms(r['kiln_int8_min_ms']),
                fmt_ms(r['ort_int8_median_ms']), fmt_ms(r['ort_int8_min_ms']), r['ratio_median'], r['ratio_min'],
                fmt_ms(r['kiln_f32_median_ms']), r['f32_over_int8_median'], r['kiln_int8_gops'],
                r['kiln_int8_pct_peak'], r['ort_int8_gops'], r['ort_int8_pct_peak']))
        if g['models']:
            L.append('| **geometric mean** (%d model%s) | | | | | **%.2f** | **%.2f** | | **%.2fx** | | | | |' % (
                g['models'], '' if g['models'] == 1 else 's', g['ratio_median'], g['ratio_min'],
                g['f32_over_int8_median']))
        L.append('')
    return L


# ---------------------------------------------------------------------------
# Report: Markdown.

def render_peers(rows, geo, threads_list) -> List[str]:
    """kiln against the best peer (the faster of ONNX Runtime and OpenVINO by median), per thread count."""
    if not any('ov_median_ms' in r for r in rows):
        return []
    L = ['## kiln / the best peer (ONNX Runtime or OpenVINO)', '',
         'OpenVINO (bench/ov_bench.py: CPU plugin, INFERENCE_PRECISION_HINT=f32, PERFORMANCE_HINT=LATENCY, '
         'NUM_STREAMS=1, INFERENCE_NUM_THREADS=N) on the same .onnx files, in the same alternating rounds. '
         'Medians in ms; the best peer is the faster one by median.', '']
    for t in threads_list:
        L.append('### %d thread%s' % (t, '' if t == 1 else 's'))
        L.append('')
        L.append('| Model | kiln median | ORT median | OpenVINO median | best peer | kiln / best peer (median) | (min) |')
        L.append('|---|---:|---:|---:|---|---:|---:|')
        for r in rows:
            if r['threads'] != t:
                continue
            ov = fmt_ms(r['ov_median_ms']) if 'ov_median_ms' in r else 'failed'
            L.append('| %s | %s | %s | %s | %s | %.2f | %.2f |' % (
                MODELS[r['model']][0], fmt_ms(r['kiln_median_ms']), fmt_ms(r['ort_median_ms']), ov, r['best_peer'],
                r['ratio_best_median'], r['ratio_best_min']))
        L.append('| **geometric mean** | | | | | **%.2f** | **%.2f** |' % (geo[t]['ratio_best_median'],
                                                                      geo[t]['ratio_best_min']))
        L.append('')
    return L


def fmt_ms(x: float) -> str:
    return '%.2f' % x if x < 100 else '%.1f' % x


def render_markdown(machine, peaks, names, info, rows, geo, profile, args, threads_list, elapsed_s,
                    vulkan=None, int8=None) -> str:
    L = []
    L.append('# Kiln benchmark results')
    L.append('')
    L.append('- Date: %s; wall time of the run: %.0f s' % (machine['date'], elapsed_s))
    L.append('- Kiln: source tree at %s; measured binaries: `%s`; `%s`' % (
        machine['kiln_git'], machine['kilnc_binary'], machine['kiln_binary']))
    L.append('- Machine: %s, %s logical CPUs (%s usable), Linux %s; %s' % (
        machine['cpu'], machine['logical_cpus'], machine['usable_cpus'], machine['kernel'],
        ', '.join(machine['cpu_flags'])))
    L.append('- Load average at start / end: %s / %s' % (
        ' '.join('%.2f' % x for x in machine['loadavg_start']), ' '.join('%.2f' % x for x in machine['loadavg_end'])))
    L.append('- Measured float32 FMA peak (bench/fma_peak.c; measured at the start, after every round and at '
             'the end, each time the best of 15 short runs; the best measurement is the peak): ' + '; '.join(
                 '%d thread%s **%.1f GFLOP/s** (%s; median of the %d measurements %.1f; 256-bit vectors %.1f)' % (
                     t, '' if t == 1 else 's', p['gflops'], p['isa'], p['measurements'],
                     p['median_of_measurements'], p['gflops_256']) for t, p in sorted(peaks.items())))
    if int8 and int8.get('peak'):
        L.append('- Measured int8 dot-product peak (bench/int8_peak.c, at the same moments as the FMA peak; 10^9 '
                 'int8 ops/s, a multiply-add is 2): ' + '; '.join(
                     '%s thread%s **%.1f GOP/s** (%s)' % (t, '' if t == '1' else 's', p['gops'], p['isa'])
                     for t, p in sorted(int8['peak'].items(), key=lambda kv: int(kv[0]))))
    L.append('- Versions: onnxruntime-node %s (node %s), torch %s, torchvision %s, onnx %s, numpy %s, %s' % (
        machine['onnxruntime_node'], machine['node'], machine['torch'], machine['torchvision'], machine['onnx'],
        machine['numpy'], machine['cc']))
    L.append('- Settings: %d round(s) per thread count, %d timed iterations (after %d warm-up) per engine per round; '
             'engines alternate, the first one swapping every round' % (args.rounds, args.iterations, args.warmup))
    L.append('')
    L.append('## Models')
    L.append('')
    L.append('| Model | Input | GFLOP | Conv/Gemm/MatMul nodes | kilnc time (s) | Bundle (MB) |')
    L.append('|---|---|---:|---:|---:|---:|')
    for n in names:
        fl = info[n]['flops']
        L.append('| %s | %s | %.3f | %d | %.1f | %.1f |' % (
            MODELS[n][0], 'x'.join(str(d) for d in MODELS[n][1]), fl['total'] / 1e9, len(fl['per_node']),
            info[n]['compile_s'], info[n]['bundle_bytes'] / 1e6))
    L.append('')
    for t in threads_list:
        L.append('## %d thread%s' % (t, '' if t == 1 else 's'))
        L.append('')
        L.append('Times in ms: median = median of the rounds\' medians, min = best single run. '
                 'Ratio = kiln / ORT (below 1: kiln is faster). GFLOP/s from the medians; '
                 '%% of the %d-thread FMA peak (%.1f GFLOP/s).' % (t, peaks[t]['gflops']))
        L.append('')
        L.append('| Model | kiln median | kiln min | ORT median | ORT min | ratio (median) | ratio (min) '
                 '| kiln GFLOP/s | ORT GFLOP/s | kiln % peak | ORT % peak |')
        L.append('|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|')
        for r in rows:
            if r['threads'] != t:
                continue
            L.append('| %s | %s | %s | %s | %s | %.2f | %.2f | %.1f | %.1f | %.1f | %.1f |' % (
                MODELS[r['model']][0], fmt_ms(r['kiln_median_ms']), fmt_ms(r['kiln_min_ms']),
                fmt_ms(r['ort_median_ms']), fmt_ms(r['ort_min_ms']), r['ratio_median'], r['ratio_min'],
                r['kiln_gflops'], r['ort_gflops'], r['kiln_pct_peak'], r['ort_pct_peak']))
        L.append('| **geometric mean** | | | | | **%.2f** | **%.2f** | | | | |' % (
            geo[t]['ratio_median'], geo[t]['ratio_min']))
        L.append('')
    if len(threads_list) > 1:
        L.append('## Thread scaling (median at %d threads / median at %d thread)' % (threads_list[-1], threads_list[0]))
        L.append('')
        L.append('| Model | kiln speed-up | ORT speed-up |')
        L.append('|---|---:|---:|')
        for n in names:
            a = next(r for r in rows if r['model'] == n and r['threads'] == threads_list[0])
            b = next(r for r in rows if r['model'] == n and r['threads'] == threads_list[-1])
            L.append('| %s | %.2fx | %.2fx |' % (MODELS[n][0], a['kiln_median_ms'] / b['kiln_median_ms'],
                                                a['ort_median_ms'] / b['ort_median_ms']))
        L.append('')
    L.extend(render_peers(rows, geo, threads_list))
    L.extend(render_int8(int8, names, threads_list))
    L.append('## Per-layer: the %d heaviest dispatches of ResNet-18 (1 thread)' % PROFILE_TOP)
    L.append('')
    if profile is None:
        L.append('Not run (ResNet-18 was not among the benchmarked models).')
    elif not profile['available']:
        L.append(profile['message'] + '.')
    else:
        L.append('`kiln bench --profile`, %d iterations; %d dispatches, sum of their medians %.2f ms '
                 '(whole-run median %.2f ms). FLOPs: the Conv/Gemm FLOPs of each dispatch\'s source '
                 'nodes (`kiln inspect --json`); %% of the 1-thread FMA peak (%.1f GFLOP/s). The %d slowest '
                 'dispatches (all that `kiln bench --profile` lists): `results.json` (`profile.listed`) and '
                 '`profile_%s.txt`.' % (
                     profile['iterations'], profile['dispatch_count'], profile['sum_of_medians_ms'] or 0.0,
                     profile['run_median_ms'], profile['peak_gflops'], len(profile['listed']), profile['model']))
        L.append('')
        L.append('| # | Dispatch | Kernel | Source nodes | median ms | share | MFLOP | GFLOP/s | % peak |')
        L.append('|---:|---:|---|---|---:|---:|---:|---:|---:|')
        for i, r in enumerate(profile['top'], 1):
            L.append('| %d | %d | `%s` | %s | %.3f | %.1f%% | %.1f | %.1f | %.1f |' % (
                i, r['dispatch'], r['kernel'], ', '.join('`%s`' % s for s in r['source_nodes']), r['median_ms'],
                r['share_pct'], r['flops'] / 1e6, r['gflops'], r['pct_peak']))
        if profile.get('conv_kinds'):
            L.append('')
            L.append('The heaviest convolution of each kernel size: every dispatch holding a conv of that size '
                     'and the largest FLOP count (ties included), worst and best % of peak among them.')
            L.append('')
            L.append('| Conv | dispatches of this kind | heaviest MFLOP | heaviest: dispatches | worst % peak '
                     '(dispatch) | best % peak |')
            L.append('|---|---:|---:|---:|---:|---:|')
            for k in profile['conv_kinds']:
                L.append('| %s | %d | %.1f | %d | %.1f (%d) | %.1f |' % (
                    k['kind'], k['dispatches'], k['heaviest_mflop'], k['heaviest_count'], k['heaviest_worst_pct'],
                    k['heaviest_worst_dispatch'], k['heaviest_best_pct']))
    L.append('')
    L.extend(render_vulkan(vulkan, names))
    return '\n'.join(L)
