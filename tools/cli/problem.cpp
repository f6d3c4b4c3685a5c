#include "problem.hpp"

#include <cmath>
#include <random>
#include <sstream>
#include <stdexcept>

#include "core/dtype_convert.hpp"

namespace attnkit::cli {

std::vector<OptionSpec> problem_option_specs() {
  return {
      {"b", "N", "batch size (varlen: number of sequences)", "2"},
      {"s", "N", "sequence length for both q and k (sets --sq and --sk)", ""},
      {"sq", "N", "query length", "1024"},
      {"sk", "N", "key length", "1024"},
      {"h", "N", "heads (sets --hq and --hkv)", ""},
      {"hq", "N", "query heads", "16"},
      {"hkv", "N", "key/value heads (GQA: hq % hkv == 0)", "16"},
      {"d", "N", "head dim", "64"},
      {"dv", "N", "value head dim (default: --d)", ""},
      {"dtype", "T", "f32 | f16 | bf16", "bf16"},
      {"device", "DEV", "cpu | cuda | cuda:N", "cpu"},
      {"layout", "L", "bshd | bhsd (memory layout; logical shape is always [B,S,H,D])", "bshd"},
      {"causal", "C", "none | top_left | bottom_right", "none"},
      {"window", "L,R", "sliding window left,right (-1 = unbounded)", ""},
      {"softcap", "C", "softcap c > 0 (0 = off)", "0"},
      {"alibi", "", "ALiBi slopes [Hq]", ""},
      {"mask", "KIND", "bool | additive: a [B,Hq,Sq,Sk] mask", ""},
      {"dropout", "P", "dropout probability", "0"},
      {"varlen", "", "pack b sequences (lengths sq/sk) as a varlen call", ""},
      {"scale", "X", "softmax scale (default 1/sqrt(D))", ""},
  };
}

static Causal causal_from(const std::string& s) {
  if (s == "none" || s == "0" || s == "false") return Causal::none;
  if (s == "top_left" || s == "1" || s == "true") return Causal::top_left;
  if (s == "bottom_right") return Causal::bottom_right;
  throw std::runtime_error("--causal = '" + s + "', expected none, top_left or bottom_right");
}

static Device device_from(const std::string& s) {
  if (s == "cpu") return Device::cpu();
  if (s == "cuda") return Device::cuda(0);
  if (s.rfind("cuda:", 0) == 0) return Device::cuda(std::stoi(s.substr(5)));
  throw std::runtime_error("--device = '" + s + "', expected cpu, cuda or cuda:N");
}

ProblemShape shape_from_args(const Args& a) {
  ProblemShape s;
  s.b = a.integer("b");
  s.sq = a.given("s") ? a.integer("s") : a.integer("sq");
  s.sk = a.given("s") ? a.integer("s") : a.integer("sk");
  s.hq = a.given("h") ? a.integer("h") : a.integer("hq");
  s.hkv = a.given("h") ? a.integer("h") : a.integer("hkv");
  s.d = a.integer("d");
  s.dv = a.given("dv") ? a.integer("dv") : s.d;
  s.dtype = dtype_from_name(a.str("dtype"));
  s.device = device_from(a.str("device"));
  const std::string layout = a.str("layout");
  if (layout != "bshd" && layout != "bhsd")
    throw std::runtime_error("--layout = '" + layout + "', expected bshd or bhsd");
  s.bhsd = layout == "bhsd";
  s.opts.causal = causal_from(a.str("causal"));
  if (a.given("window")) {
    const auto w = a.int_list("window");
    if (w.size() != 2) throw std::runtime_error("--window expects L,R (e.g. 128,0)");
    s.opts.window_left = w[0];
    s.opts.window_right = w[1];
  }
  s.opts.softcap = a.real("softcap");
  s.opts.dropout_p = a.real("dropout");
  if (a.given("scale")) s.opts.scale = a.real("scale");
  s.alibi = a.flag("alibi");
  s.mask = a.str("mask");
  if (!s.mask.empty() && s.mask != "bool" && s.mask != "additive")
    throw std::runtime_error("--mask = '" + s.mask + "', expected bool or additive");
  s.varlen = a.flag("varlen");
  return s;
}

std::string ProblemShape::describe() const {
  std::ostringstream os;
  os << "B=" << b << " Sq=" << sq << " Sk=" << sk << " Hq=" << hq << " Hkv=" << hkv << " D=" << d;
  if (dv != d) os << " Dv=" << dv;
  os << " " << dtype_name(dtype) << " " << device.str();
  if (opts.causal != Causal::none) os << " causal=" << causal_name(opts.causal);
  if (opts.window_left >= 0 || opts.window_right >= 0)
    os << " window=" << opts.window_left << "," << opts.window_right;
  if (opts.softcap > 0) os << " softcap=" << opts.softcap;
  if (alibi) os << " alibi";
  if (!mask.empty()) os << " mask=" << mask;
  if (opts.dropout_p > 0) os << " dropout=" << opts.dropout_p;
  if (varlen) os << " varlen";
  if (bhsd) os << " bhsd";
  return os.str();
}

double ProblemShape::forward_flops() const {
  double f = 2.0 * b * hq * sq * sk * (d + dv);
  if (opts.causal != Causal::none && sq == sk) f *= 0.5;
  return f;
}

namespace {
DeviceBuffer random_buffer(int64_t n, DType dt, Device dev, std::mt19937_64& rng,
                           double scale = 1.0) {
  std::vector<unsigned char> host(static_cast<size_t>(n) * dtype_size(dt));
  std::normal_distribution<double> nd(0.0, 1.0);
  for (int64_t i = 0; i < n; ++i)
    store_from_double(host.data(), i, dt, scale * nd(rng));
  DeviceBuffer buf(host.size(), dev);
  if (!host.empty())
    device_runtime(dev.type).copy_to_device(buf.get(), host.data(), host.size(), dev);
  return buf;
}
DeviceBuffer host_filled(const std::vector<unsigned char>& host, Device dev) {
  DeviceBuffer buf(host.size(), dev);
  if (!host.empty())
    device_runtime(dev.type).copy_to_device(buf.get(), host.data(), host.size(), dev);
  return buf;
}
}  // namespace

Problem::Problem(const ProblemShape& s, bool with_backward, uint64_t seed) : s_(s) {
  std::mt19937_64 rng(seed);
  const int64_t tq = s.b * s.sq, tk = s.b * s.sk;  // tokens (packed for varlen)
  q_ = random_buffer(tq * s.hq * s.d, s.dtype, s.device, rng);
  k_ = random_buffer(tk * s.hkv * s.d, s.dtype, s.device, rng);
  v_ = random_buffer(tk * s.hkv * s.dv, s.dtype, s.device, rng);
  out_ = DeviceBuffer(static_cast<size_t>(tq * s.hq * s.dv) * dtype_size(s.dtype), s.device);
  lse_ = DeviceBuffer(static_cast<size_t>(tq * s.hq) * sizeof(float), s.device);
  if (with_backward) {
    dout_ = random_buffer(tq * s.hq * s.dv, s.dtype, s.device, rng);
    dq_ = DeviceBuffer(q_.bytes(), s.device);
    dk_ = DeviceBuffer(k_.bytes(), s.device);
    dv_ = DeviceBuffer(v_.bytes(), s.device);
  }
  if (!s.mask.empty()) {
    const int64_t n = s.b * s.hq * s.sq * s.sk;
    if (s.mask == "bool") {
      std::vector<unsigned char> m(static_cast<size_t>(n));
      std::bernoulli_distribution keep(0.8);
      for (auto& x : m)
        x = keep(rng);
      mask_ = host_filled(m, s.device);
    } else {
      mask_ = random_buffer(n, s.dtype, s.device, rng, 0.5);
    }
  }
  if (s.alibi) {
    std::vector<unsigned char> a(static_cast<size_t>(s.hq) * 4);
    for (int64_t h = 0; h < s.hq; ++h)
      store_from_double(a.data(), h, DType::f32, std::pow(2.0, -8.0 * (h + 1) / s.hq));
    alibi_ = host_filled(a, s.device);
  }
  if (s.varlen) {
    std::vector<unsigned char> cq((s.b + 1) * 4), ck((s.b + 1) * 4);
    for (int64_t i = 0; i <= s.b; ++i) {
      store_from_double(cq.data(), i, DType::i32, static_cast<double>(i * s.sq));
      store_from_double(ck.data(), i, DType::i32, static_cast<double>(i * s.sk));
    }
    cuq_ = host_filled(cq, s.device);
    cuk_ = host_filled(ck, s.device);
  }
}

TensorView Problem::view(const DeviceBuffer& buf, DType dt, int64_t s, int64_t h, int64_t d) const {
  if (s_.varlen) return TensorView::contiguous(buf.get(), dt, {s_.b * s, h, d}, s_.device);
  if (s_.bhsd) return TensorView::bhsd(buf.get(), dt, s_.b, s, h, d, s_.device);
  return TensorView::contiguous(buf.get(), dt, {s_.b, s, h, d}, s_.device);
}

ForwardArgs Problem::forward_args() const {
  ForwardArgs a;
  a.q = view(q_, s_.dtype, s_.sq, s_.hq, s_.d);
  a.k = view(k_, s_.dtype, s_.sk, s_.hkv, s_.d);
  a.v = view(v_, s_.dtype, s_.sk, s_.hkv, s_.dv);
  a.out = view(out_, s_.dtype, s_.sq, s_.hq, s_.dv);
  a.lse = s_.varlen
              ? TensorView::contiguous(lse_.get(), DType::f32, {s_.hq, s_.b * s_.sq}, s_.device)
              : TensorView::contiguous(lse_.get(), DType::f32, {s_.b, s_.hq, s_.sq}, s_.device);
  return a;
}

BackwardArgs Problem::backward_args() const {
  const ForwardArgs f = forward_args();
  BackwardArgs a;
  a.q = f.q;
  a.k = f.k;
  a.v = f.v;
  a.out = f.out;
  a.lse = f.lse;
  a.dout = view(dout_, s_.dtype, s_.sq, s_.hq, s_.dv);
  a.dq = view(dq_, s_.dtype, s_.sq, s_.hq, s_.d);
  a.dk = view(dk_, s_.dtype, s_.sk, s_.hkv, s_.d);
  a.dv = view(dv_, s_.dtype, s_.sk, s_.hkv, s_.dv);
  return a;
}

Options Problem::options() const {
  Options o = s_.opts;
  if (!s_.mask.empty())
    o.mask = TensorView::contiguous(mask_.get(), s_.mask == "bool" ? DType::b8 : s_.dtype,
                                    {s_.b, s_.hq, s_.sq, s_.sk}, s_.device);
  if (s_.alibi)
    o.alibi_slopes = TensorView::contiguous(alibi_.get(), DType::f32, {s_.hq}, s_.device);
  if (s_.varlen) {
    o.cu_seqlens_q = TensorView::contiguous(cuq_.get(), DType::i32, {s_.b + 1}, s_.device);
    o.cu_seqlens_k = TensorView::contiguous(cuk_.get(), DType::i32, {s_.b + 1}, s_.device);
    o.max_seqlen_q = s_.sq;
    o.max_seqlen_k = s_.sk;
  }
  return o;
}

size_t Problem::bytes() const {
  size_t n = 0;
  for (const DeviceBuffer* b : {&q_, &k_, &v_, &out_, &lse_, &dout_, &dq_, &dk_, &dv_, &mask_})
    n += b->bytes();
  return n;
}

}  // namespace attnkit::cli
