// The Graphviz writer of `kiln inspect --dot` and the `dot -Tsvg` pipe of
// --svg. The bundle records the tensors that have storage; a value that
// lives only inside a fused kernel (a Conv's output before its Relu) is in
// no node's lists, so inside a cluster consecutive nodes without a recorded
// edge are joined by a dashed "fused" edge, in the dispatch's node order.
#include "dot.h"

#include <errno.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <set>

#include "common.h"

extern char** environ;

namespace kiln_tool {

namespace {

// A DOT string's contents: quotes and backslashes escaped, bytes that are
// not printable ASCII (names from untrusted bundles) as '?'.
std::string Escape(const std::string& text) {
  std::string out;
  for (unsigned char ch : text) {
    if (ch == '"' || ch == '\\') out += '\\';
    out += ch < 0x20 || ch >= 0x7f ? '?' : (char)ch;
  }
  return out;
}

std::string TypeText(const kiln_tensor_info_t& t) { return kiln_dtype_name(t.dtype) + ShapeText(t); }

// "0.123 ms, 12.3%"
std::string TimeText(double ms, double total) {
  char text[64];
  snprintf(text, sizeof(text), "%.3f ms, %.1f%%", ms, total > 0 ? 100.0 * ms / total : 0.0);
  return text;
}

// The fill of something that took `ms` of the slowest `max_ms`: Graphviz's
// reds9 scheme, 1 (lightest) to 9; white text on the darkest. Attributes
// separated by `separator` (", " in a node's list, "; " in a cluster).
std::string Heat(double ms, double max_ms, const char* separator) {
  int level = max_ms > 0 ? 1 + (int)(8.0 * ms / max_ms + 0.5) : 1;
  level = std::min(9, std::max(1, level));
  return std::string("colorscheme=reds9") + separator + "fillcolor=" + std::to_string(level) +
         (level >= 7 ? std::string(separator) + "fontcolor=white" : "");
}

// Where to find `program` on PATH ("" when it is not there).
std::string FindOnPath(const char* program) {
  const char* path = getenv("PATH");
  std::string dirs = path ? path : "";
  for (size_t start = 0; start <= dirs.size();) {
    size_t end = dirs.find(':', start);
    if (end == std::string::npos) end = dirs.size();
    std::string dir = dirs.substr(start, end - start);
    std::string candidate = (dir.empty() ? "." : dir) + "/" + program;
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
    start = end + 1;
  }
  return "";
}

}  // namespace

std::string DotGraph(const ModelContents& c, const std::vector<double>& dispatch_ms,
                     const std::string& measured_on) {
  const bool timed = !dispatch_ms.empty();
  std::vector<int> producer(c.tensors.size(), -1);  // tensor -> the node that writes it
  for (size_t n = 0; n < c.nodes.size(); ++n) {
    for (uint32_t o = 0; o < c.nodes[n].output_count; ++o) producer[c.nodes[n].outputs[o]] = (int)n;
  }
  // Clusters: one per distinct list of source nodes of a multi-node
  // dispatch; a node belongs to the first cluster that lists it.
  std::map<std::vector<uint32_t>, size_t> cluster_index;
  std::vector<std::vector<size_t>> cluster_dispatches;
  std::vector<int> cluster_of(c.nodes.size(), -1);
  std::vector<double> node_ms(c.nodes.size(), 0.0), cluster_ms;
  std::vector<std::string> node_kernels(c.nodes.size());
  for (size_t d = 0; d < c.dispatches.size(); ++d) {
    const kiln_dispatch_info_t& dispatch = c.dispatches[d];
    double ms = timed ? dispatch_ms[d] : 0.0;
    std::string kernel = "dispatch " + std::to_string(d) + ": " + c.kernels[dispatch.kernel].name;
    if (dispatch.source_node_count == 1) {
      uint32_t n = dispatch.source_nodes[0];
      node_ms[n] += ms;
      node_kernels[n] += (node_kernels[n].empty() ? "" : "\\n") + kernel;
      continue;
    }
    if (dispatch.source_node_count == 0) continue;
    std::vector<uint32_t> key(dispatch.source_nodes, dispatch.source_nodes + dispatch.source_node_count);
    auto found = cluster_index.emplace(key, cluster_dispatches.size());
    if (found.second) {
      cluster_dispatches.emplace_back();
      cluster_ms.push_back(0.0);
      for (uint32_t n : key) {
        if (cluster_of[n] < 0) cluster_of[n] = (int)found.first->second;
      }
    }
    cluster_dispatches[found.first->second].push_back(d);
    cluster_ms[found.first->second] += ms;
  }
  double total = 0, max_ms = 0;
  for (const std::vector<double>* times : {&node_ms, &cluster_ms}) {
    for (double ms : *times) {
      total += ms;
      max_ms = std::max(max_ms, ms);
    }
  }

  std::string out = "digraph kiln {\n  rankdir=TB;\n  newrank=true;\n  fontname=Helvetica;\n"
                    "  node [shape=box, style=\"rounded,filled\", fillcolor=white, fontname=Helvetica, fontsize=10];\n"
                    "  edge [fontname=Helvetica, fontsize=9];\n";
  if (timed) {
    out += "  label=\"kernel time on " + Escape(measured_on) + ": darker is slower; " + TimeText(total, total) +
           " in all\";\n  labelloc=t;\n";
  }
  // Nodes, inside their cluster if they have one.
  auto node_line = [&](size_t n) {
    const kiln_node_info_t& node = c.nodes[n];
    std::string label = Escape(node.op_type) + "\\n" + Escape(node.name);
    std::string attributes;
    if (timed && node_ms[n] > 0) {
      label += "\\n" + TimeText(node_ms[n], total);
      attributes = ", " + Heat(node_ms[n], max_ms, ", ");
    }
    if (!node_kernels[n].empty()) attributes += ", tooltip=\"" + Escape(node_kernels[n]) + "\"";
    if (node_kernels[n].empty() && cluster_of[n] < 0) {  // a view of its input, or folded away
      label += "\\n(no kernel)";
      attributes += ", style=\"rounded,dashed\"";
    }
    return "n" + std::to_string(n) + " [label=\"" + label + "\"" + attributes + "];\n";
  };
  for (size_t k = 0; k < cluster_dispatches.size(); ++k) {
    std::string label;
    for (size_t d : cluster_dispatches[k]) {
      label += (label.empty() ? "" : "\\n") + Escape("dispatch " + std::to_string(d) + ": " +
                                                     c.kernels[c.dispatches[d].kernel].name);
    }
    out += "  subgraph cluster_" + std::to_string(k) + " {\n    label=\"" + label +
           (timed ? "\\n" + TimeText(cluster_ms[k], total) : std::string()) + "\";\n    style=\"rounded" +
           (timed ? ",filled\"; " + Heat(cluster_ms[k], max_ms, "; ") : std::string("\"")) + ";\n";
    for (size_t n = 0; n < c.nodes.size(); ++n) {
      if (cluster_of[n] == (int)k) out += "    " + node_line(n);
    }
    out += "  }\n";
  }
  for (size_t n = 0; n < c.nodes.size(); ++n) {
    if (cluster_of[n] < 0) out += "  " + node_line(n);
  }
  // The model's inputs and outputs.
  std::map<uint32_t, std::string> input_ids;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    input_ids[c.inputs[i].index] = "in" + std::to_string(i);
    out += "  in" + std::to_string(i) + " [shape=ellipse, label=\"input\\n" + Escape(c.inputs[i].name) + "\\n" +
           TypeText(c.inputs[i]) + "\"];\n";
  }
  for (size_t i = 0; i < c.outputs.size(); ++i) {
    out += "  out" + std::to_string(i) + " [shape=ellipse, label=\"output\\n" + Escape(c.outputs[i].name) + "\"];\n";
  }
  // Edges: every stored tensor from its producer (or a model input) to each
  // node reading it; constants (weights) are left out.
  std::set<std::pair<size_t, size_t>> joined;  // node -> node edges drawn
  for (size_t n = 0; n < c.nodes.size(); ++n) {
    const kiln_node_info_t& node = c.nodes[n];
    for (uint32_t i = 0; i < node.input_count; ++i) {
      const kiln_tensor_info_t& t = c.tensors[node.inputs[i]];
      if (t.storage == KILN_STORAGE_CONSTANT) continue;
      std::string from;
      if (producer[t.index] >= 0) {
        from = "n" + std::to_string(producer[t.index]);
        joined.insert({(size_t)producer[t.index], n});
      } else if (input_ids.count(t.index)) {
        from = input_ids[t.index];
      } else {
        continue;
      }
      out += "  " + from + " -> n" + std::to_string(n) + " [label=\"" + TypeText(t) + "\"];\n";
    }
  }
  for (size_t i = 0; i < c.outputs.size(); ++i) {
    int from = producer[c.outputs[i].index];
    std::string source = from >= 0 ? "n" + std::to_string(from) : input_ids.count(c.outputs[i].index) ? input_ids[c.outputs[i].index] : "";
    if (!source.empty()) {
      out += "  " + source + " -> out" + std::to_string(i) + " [label=\"" + TypeText(c.outputs[i]) + "\"];\n";
    }
  }
  for (const auto& cluster : cluster_index) {
    const std::vector<uint32_t>& nodes = cluster.first;
    for (size_t i = 0; i + 1 < nodes.size(); ++i) {
      if (joined.count({nodes[i], nodes[i + 1]}) || nodes[i] == nodes[i + 1]) continue;
      joined.insert({nodes[i], nodes[i + 1]});
      out += "  n" + std::to_string(nodes[i]) + " -> n" + std::to_string(nodes[i + 1]) +
             " [style=dashed, label=\"fused\"];\n";
    }
  }
  return out + "}\n";
}

int WriteSvg(const std::string& dot_text) {
  std::string dot = FindOnPath("dot");
  if (dot.empty()) {
    return Fail("--svg runs Graphviz's 'dot', which is not on PATH: install Graphviz "
                "(apt-get install graphviz), or write the graph with --dot and render it elsewhere");
  }
  int pipe_fds[2];
  if (pipe(pipe_fds) != 0) return Fail("--svg: pipe: %s", strerror(errno));
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[0], 0);
  posix_spawn_file_actions_addclose(&actions, pipe_fds[0]);
  posix_spawn_file_actions_addclose(&actions, pipe_fds[1]);
  char arg0[] = "dot", arg1[] = "-Tsvg";
  char* spawn_argv[] = {arg0, arg1, nullptr};
  fflush(stdout);
  pid_t child = 0;
  int spawned = posix_spawn(&child, dot.c_str(), &actions, nullptr, spawn_argv, environ);
  posix_spawn_file_actions_destroy(&actions);
  close(pipe_fds[0]);
  if (spawned != 0) {
    close(pipe_fds[1]);
    return Fail("--svg: cannot run '%s': %s", dot.c_str(), strerror(spawned));
  }
  // A dot that exits early must not kill kiln with SIGPIPE: the write fails instead.
  void (*previous)(int) = signal(SIGPIPE, SIG_IGN);
  const char* data = dot_text.data();
  size_t left = dot_text.size();
  while (left > 0) {
    ssize_t written = write(pipe_fds[1], data, left);
    if (written < 0 && errno == EINTR) continue;
    if (written <= 0) break;
    data += written;
    left -= (size_t)written;
  }
  close(pipe_fds[1]);
  signal(SIGPIPE, previous);
  int status = 0;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return Fail("--svg: '%s -Tsvg' failed (%s %d)", dot.c_str(), WIFEXITED(status) ? "exit status" : "signal",
                WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
  }
  if (left > 0) return Fail("--svg: '%s' stopped reading its input", dot.c_str());
  return kExitOk;
}

}  // namespace kiln_tool
