// attnkit._attnkit: the nanobind module under the Python package (issue #7).
//
// A thin adapter: DLPack arrays (numpy, torch, CuPy, JAX, ...) arrive as nb::ndarray, become
// attnkit::TensorView over the caller's memory (no copy; nanobind strides are in elements, as
// TensorView's), options arrive as keyword arguments, and the call runs with the GIL released.
// Allocation, layout names, stream lookup and the torch integration live in python/attnkit/*.py.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "attnkit/attnkit.hpp"

namespace nb = nanobind;

namespace {

using attnkit::DType;
using attnkit::Error;
using attnkit::ErrorCode;
using attnkit::TensorView;

// Inputs may be read-only (numpy views of constants, JAX buffers); outputs must be writable.
using InArray = nb::ndarray<nb::ro>;
using OutArray = nb::ndarray<>;

[[noreturn]] void invalid(const std::string& msg) {
  throw Error(ErrorCode::kInvalidArgument, msg);
}

DType dtype_of(const nb::dlpack::dtype& t, const char* name) {
  using Code = nb::dlpack::dtype_code;
  const auto code = static_cast<Code>(t.code);
  if (t.lanes == 1) {
    if (code == Code::Float && t.bits == 32) return DType::f32;
    if (code == Code::Float && t.bits == 16) return DType::f16;
    if (code == Code::Bfloat && t.bits == 16) return DType::bf16;
    if (code == Code::Float8_E4M3FN && t.bits == 8) return DType::f8e4m3;
    if (code == Code::Float8_E5M2 && t.bits == 8) return DType::f8e5m2;
    if (code == Code::Int && t.bits == 8) return DType::i8;
    if (code == Code::Int && t.bits == 32) return DType::i32;
    if (code == Code::Bool && t.bits == 8) return DType::b8;
  }
  invalid(std::string(name) + ".dtype = DLPack(code " + std::to_string(t.code) + ", bits " +
          std::to_string(t.bits) + ", lanes " + std::to_string(t.lanes) +
          "), expected one of float32, float16, bfloat16, float8_e4m3fn, float8_e5m2, int8, "
          "int32, bool");
}

attnkit::Device device_of(int type, int id, const char* name) {
  switch (type) {
    case nb::device::cpu::value:
    case nb::device::cuda_host::value:  // pinned host memory: readable by the CPU
      return attnkit::Device::cpu();
    case nb::device::cuda::value:
    case nb::device::cuda_managed::value:
      return attnkit::Device::cuda(id);
  }
  invalid(std::string(name) + ": DLPack device type " + std::to_string(type) +
          " is not supported, expected a CPU or CUDA array");
}

// Logical view of a DLPack array. `bhsd`: the array is [B, H, S, D] and becomes the logical
// [B, S, H, D] view by swapping dims 1 and 2 (a stride permutation, never a copy).
template <typename Array>
TensorView view_of(const Array& a, const char* name, bool bhsd = false) {
  TensorView t;
  const int rank = static_cast<int>(a.ndim());
  if (rank > attnkit::kMaxRank)
    invalid(std::string(name) + ".ndim = " + std::to_string(rank) + ", expected at most " +
            std::to_string(attnkit::kMaxRank));
  if (bhsd && rank != 4)
    invalid(std::string(name) + ".ndim = " + std::to_string(rank) +
            ", expected 4 with layout BHSD ([B, H, S, D])");
  t.data = const_cast<void*>(static_cast<const void*>(a.data()));
  t.dtype = dtype_of(a.dtype(), name);
  t.device = device_of(a.device_type(), a.device_id(), name);
  t.rank = rank;
  for (int i = 0; i < rank; ++i) {
    t.shape[i] = static_cast<int64_t>(a.shape(i));
    t.stride[i] = a.stride(i);
  }
  if (bhsd) {
    std::swap(t.shape[1], t.shape[2]);
    std::swap(t.stride[1], t.stride[2]);
  }
  return t;
}

// Optional array argument: None -> empty view.
template <typename Array>
TensorView optional_view(nb::handle h, const char* name, std::vector<Array>& keep,
                         bool bhsd = false) {
  if (h.is_none()) return {};
  Array a;
  if (!nb::try_cast(h, a, /*convert=*/false))
    invalid(std::string(name) + " is a " + nb::type_name(h.type()).c_str() +
            ", expected an array supporting DLPack or the buffer protocol" +
            (std::is_same_v<Array, OutArray> ? " (writable)" : ""));
  keep.push_back(a);
  return view_of(a, name, bhsd);
}

attnkit::Causal causal_of(const std::string& s) {
  if (s == "none" || s.empty()) return attnkit::Causal::none;
  if (s == "top_left") return attnkit::Causal::top_left;
  if (s == "bottom_right") return attnkit::Causal::bottom_right;
  invalid("causal = '" + s + "', expected 'none', 'top_left' or 'bottom_right'");
}

// Keyword options shared by forward, backward and explain. `keep` holds the option arrays
// (mask, slopes, cu_seqlens) alive until the call returns. Returns the layout flag (bhsd).
bool parse_options(const nb::kwargs& kw, attnkit::Options& o, std::vector<InArray>& keep) {
  bool bhsd = false;
  for (auto [key_h, value] : kw) {
    const std::string key = nb::cast<std::string>(key_h);
    if (value.is_none()) continue;  // None = the option's default
    if (key == "mask")
      o.mask = optional_view(value, "attn_mask", keep);
    else if (key == "alibi_slopes")
      o.alibi_slopes = optional_view(value, "alibi_slopes", keep);
    else if (key == "cu_seqlens_q")
      o.cu_seqlens_q = optional_view(value, "cu_seqlens_q", keep);
    else if (key == "cu_seqlens_k")
      o.cu_seqlens_k = optional_view(value, "cu_seqlens_k", keep);
    else if (key == "max_seqlen_q")
      o.max_seqlen_q = nb::cast<int64_t>(value);
    else if (key == "max_seqlen_k")
      o.max_seqlen_k = nb::cast<int64_t>(value);
    else if (key == "scale")
      o.scale = nb::cast<double>(value);
    else if (key == "softcap")
      o.softcap = nb::cast<double>(value);
    else if (key == "causal")
      o.causal = causal_of(nb::cast<std::string>(value));
    else if (key == "window_left")
      o.window_left = nb::cast<int64_t>(value);
    else if (key == "window_right")
      o.window_right = nb::cast<int64_t>(value);
    else if (key == "dropout_p")
      o.dropout_p = nb::cast<double>(value);
    else if (key == "dropout_seed")
      o.dropout_seed = nb::cast<uint64_t>(value);
    else if (key == "dropout_offset")
      o.dropout_offset = nb::cast<uint64_t>(value);
    else if (key == "deterministic")
      o.deterministic = nb::cast<bool>(value);
    else if (key == "stream")
      o.stream = reinterpret_cast<void*>(nb::cast<uintptr_t>(value));
    else if (key == "backend")
      o.backend = nb::cast<std::string>(value);
    else if (key == "allow_quantized")
      o.allow_quantized = nb::cast<bool>(value);
    else if (key == "bhsd")
      bhsd = nb::cast<bool>(value);
    else
      invalid("unknown option '" + key + "'");
  }
  return bhsd;
}

std::string run_forward(nb::handle q, nb::handle k, nb::handle v, nb::handle out, nb::handle lse,
                        const nb::kwargs& kw) {
  std::vector<InArray> keep;
  std::vector<OutArray> keep_out;
  attnkit::Options opts;
  const bool bhsd = parse_options(kw, opts, keep);
  attnkit::ForwardArgs args;
  args.q = optional_view(q, "q", keep, bhsd);
  args.k = optional_view(k, "k", keep, bhsd);
  args.v = optional_view(v, "v", keep, bhsd);
  args.out = optional_view(out, "out", keep_out, bhsd);
  args.lse = optional_view(lse, "lse", keep_out);
  nb::gil_scoped_release release;
  return attnkit::forward(args, opts);
}

std::string run_backward(nb::handle dout, nb::handle q, nb::handle k, nb::handle v, nb::handle out,
                         nb::handle lse, nb::handle dq, nb::handle dk, nb::handle dv,
                         const nb::kwargs& kw) {
  std::vector<InArray> keep;
  std::vector<OutArray> keep_out;
  attnkit::Options opts;
  const bool bhsd = parse_options(kw, opts, keep);
  attnkit::BackwardArgs args;
  args.dout = optional_view(dout, "dout", keep, bhsd);
  args.q = optional_view(q, "q", keep, bhsd);
  args.k = optional_view(k, "k", keep, bhsd);
  args.v = optional_view(v, "v", keep, bhsd);
  args.out = optional_view(out, "out", keep, bhsd);
  args.lse = optional_view(lse, "lse", keep);
  args.dq = optional_view(dq, "dq", keep_out, bhsd);
  args.dk = optional_view(dk, "dk", keep_out, bhsd);
  args.dv = optional_view(dv, "dv", keep_out, bhsd);
  nb::gil_scoped_release release;
  return attnkit::backward(args, opts);
}

attnkit::Explanation run_explain(nb::handle q, nb::handle k, nb::handle v, nb::handle out,
                                 nb::handle lse, bool backward, const nb::kwargs& kw) {
  std::vector<InArray> keep;
  attnkit::Options opts;
  const bool bhsd = parse_options(kw, opts, keep);
  attnkit::ForwardArgs args;
  args.q = optional_view(q, "q", keep, bhsd);
  args.k = optional_view(k, "k", keep, bhsd);
  args.v = optional_view(v, "v", keep, bhsd);
  args.out = optional_view(out, "out", keep, bhsd);
  args.lse = optional_view(lse, "lse", keep);
  nb::gil_scoped_release release;
  return attnkit::explain(args, opts, backward);
}

// `with attnkit.backend(name):` — owns one thread-local attnkit::BackendGuard between enter and
// exit. The guard belongs to the thread that entered; exiting on another thread is refused
// (it would pop that other thread's scope).
class BackendScope {
 public:
  explicit BackendScope(std::string name) : name_(std::move(name)) {}
  ~BackendScope() {
    // Never entered, or exited: nothing to do. Still entered on another thread (the object was
    // collected elsewhere without exit): leak the guard rather than pop a foreign scope.
    if (guard_ && thread_ != std::this_thread::get_id()) (void)guard_.release();
  }
  void enter() {
    if (guard_) invalid("backend scope '" + name_ + "' is already entered");
    guard_ = std::make_unique<attnkit::BackendGuard>(name_);
    thread_ = std::this_thread::get_id();
  }
  void exit() {
    if (!guard_) invalid("backend scope '" + name_ + "' was not entered");
    if (thread_ != std::this_thread::get_id())
      invalid("backend scope '" + name_ + "' exited on another thread than it was entered on");
    guard_.reset();
  }
  const std::string& name() const { return name_; }
  bool active() const { return guard_ != nullptr; }

 private:
  std::string name_;
  std::unique_ptr<attnkit::BackendGuard> guard_;
  std::thread::id thread_;
};

// attnkit::Error -> the Python exception built by attnkit._errors.from_code(code_name, message).
PyObject* g_error_factory = nullptr;  // strong reference, intentionally never released

void translate_error(const std::exception_ptr& p, void*) {
  try {
    std::rethrow_exception(p);
  } catch (const Error& e) {
    const char* code = attnkit::error_code_name(e.code());
    if (!g_error_factory) {
      PyErr_Format(PyExc_RuntimeError, "[%s] %s", code, e.what());
      return;
    }
    PyObject* exc = PyObject_CallFunction(g_error_factory, "ss", code, e.what());
    if (!exc) return;  // the factory raised; that error stays set
    PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(exc)), exc);
    Py_DECREF(exc);
  }
}

nb::list dtype_names(const std::vector<DType>& v) {
  nb::list l;
  for (DType t : v)
    l.append(attnkit::dtype_name(t));
  return l;
}

nb::dict caps_dict(const attnkit::Capabilities& c) {
  nb::dict d;
  d["dtypes"] = dtype_names(c.dtypes);
  d["head_dims"] = nb::cast(c.head_dims);
  d["max_head_dim"] = c.max_head_dim;
  d["head_dim_v_differs"] = c.head_dim_v_differs;
  d["device"] = c.device == attnkit::DeviceType::cuda ? "cuda" : "cpu";
  d["min_arch"] = c.min_arch;
  d["max_arch"] = c.max_arch;
  d["causal_top_left"] = c.causal_top_left;
  d["causal_bottom_right"] = c.causal_bottom_right;
  d["window"] = c.window;
  d["softcap"] = c.softcap;
  d["alibi"] = c.alibi;
  d["mask_bool"] = c.mask_bool;
  d["mask_additive"] = c.mask_additive;
  d["gqa"] = c.gqa;
  d["varlen"] = c.varlen;
  d["lse"] = c.lse;
  d["dropout"] = c.dropout;
  d["backward"] = c.backward;
  d["deterministic"] = c.deterministic;
  d["tier"] = c.tier == attnkit::AccuracyTier::quantized ? "quantized" : "exact";
  return d;
}

}  // namespace

NB_MODULE(_attnkit, m) {
  m.doc() = "attnkit C++ bindings (use the `attnkit` package, not this module directly)";
  nb::register_exception_translator(translate_error);

  m.def(
      "_set_error_factory",
      [](nb::object f) {
        Py_XDECREF(g_error_factory);
        g_error_factory = f.release().ptr();
      },
      "Called once by attnkit/__init__.py: fn(code_name, message) -> exception instance.");

  m.def("forward", &run_forward, nb::arg("q").none(), nb::arg("k").none(), nb::arg("v").none(),
        nb::arg("out").none(), nb::arg("lse").none() = nb::none(), nb::arg("options"),
        "forward(q, k, v, out, lse=None, **options) -> name of the backend that ran");
  m.def("backward", &run_backward, nb::arg("dout").none(), nb::arg("q").none(), nb::arg("k").none(),
        nb::arg("v").none(), nb::arg("out").none(), nb::arg("lse").none(), nb::arg("dq").none(),
        nb::arg("dk").none(), nb::arg("dv").none(), nb::arg("options"),
        "backward(dout, q, k, v, out, lse, dq, dk, dv, **options) -> backend name");
  m.def("explain", &run_explain, nb::arg("q").none(), nb::arg("k").none(), nb::arg("v").none(),
        nb::arg("out").none(), nb::arg("lse").none() = nb::none(), nb::arg("backward") = false,
        nb::arg("options"));

  nb::class_<attnkit::BackendVerdict>(m, "BackendVerdict")
      .def_ro("name", &attnkit::BackendVerdict::name)
      .def_ro("built", &attnkit::BackendVerdict::built)
      .def_ro("ok", &attnkit::BackendVerdict::ok)
      .def_ro("reasons", &attnkit::BackendVerdict::reasons)
      .def("__repr__", [](const attnkit::BackendVerdict& v) {
        std::string r = "BackendVerdict(" + v.name + ", ";
        r += !v.built ? "not built" : v.ok ? "ok" : "cannot run";
        return r + ")";
      });
  nb::class_<attnkit::Explanation>(m, "Explanation")
      .def_ro("selected", &attnkit::Explanation::selected)
      .def_ro("rule", &attnkit::Explanation::rule)
      .def_ro("backends", &attnkit::Explanation::backends)
      .def("__str__", &attnkit::Explanation::str)
      .def("__repr__", [](const attnkit::Explanation& e) {
        return "Explanation(selected='" + e.selected + "', rule='" + e.rule + "')";
      });

  nb::class_<BackendScope>(m, "BackendScope")
      .def(nb::init<std::string>(), nb::arg("name"))
      .def("enter", &BackendScope::enter)
      .def("exit", &BackendScope::exit)
      .def_prop_ro("name", &BackendScope::name)
      .def_prop_ro("active", &BackendScope::active);

  m.def("set_default_backend", &attnkit::set_default_backend, nb::arg("name"));
  m.def("default_backend", &attnkit::default_backend);
  m.def("set_num_threads", &attnkit::set_num_threads, nb::arg("n"));
  m.def("num_threads", &attnkit::num_threads);
  m.def("canonical_backend_name", &attnkit::canonical_backend_name, nb::arg("name"));

  m.def("list_backends", [] {
    nb::list out;
    for (const auto& b : attnkit::list_backends()) {
      nb::dict d;
      d["name"] = b.name;
      d["aliases"] = nb::cast(b.aliases);
      d["summary"] = b.summary;
      d["built"] = b.built;
      d["not_built_reason"] = b.not_built_reason;
      d["capabilities"] = b.built ? nb::object(caps_dict(b.caps)) : nb::none();
      out.append(d);
    }
    return out;
  });
  m.def("list_devices", [] {
    nb::list out;
    for (const auto& dev : attnkit::list_devices()) {
      nb::dict d;
      d["device"] = dev.device.str();
      d["name"] = dev.name;
      d["arch"] = dev.arch;
      d["sm_count"] = dev.sm_count;
      d["memory_bytes"] = dev.memory_bytes;
      out.append(d);
    }
    return out;
  });
  m.def("build_info", [] {
    const attnkit::BuildInfo b = attnkit::build_info();
    nb::dict d;
    d["version"] = b.version;
    d["cuda"] = b.cuda;
    d["cuda_archs"] = b.cuda_archs;
    d["head_dims"] = b.head_dims;
    d["cudnn"] = b.cudnn;
    d["compiler"] = b.compiler;
    d["build_type"] = b.build_type;
    return d;
  });
}
