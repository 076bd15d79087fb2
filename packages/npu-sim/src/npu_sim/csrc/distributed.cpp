// Process group backend for device "npu" (registered as "hccl", torch_npu's name, by
// npu_sim/distributed.py): every collective runs on a host backend (gloo) over CPU aliases of
// the npu tensors. Storages are host memory, so no copy is made: gloo reads and writes the npu
// memory itself.
//
// Collectives complete before they return (npu-sim runs all device work synchronously on the
// host), so nothing can free or reuse an npu block while gloo still uses it; the Work handed
// back is completed, its future holds the npu outputs (what DDP's comm hooks read).
// Point-to-point ops stay asynchronous (a blocking send deadlocks two ranks that send to each
// other first), their Work keeps the npu tensors alive until it is destroyed.
//
// Every gloo Work holds the issuing thread's thread-local state (at::ThreadLocalState): Python
// objects, such as the contextvars.Context every backward stashes there (torch.autograd's
// _engine_run_backward) or the active Python modes. gloo's worker thread keeps its reference to
// a Work for a moment after completing it; if that reference is the last, the worker drops the
// Python objects and needs the GIL to do so. When the interpreter finalizes meanwhile (a
// script's last gradient all-reduce, a few milliseconds before its end), Python ends the
// worker in its GIL acquisition (pthread_exit), whose unwind through a noexcept destructor
// aborts the process: "terminate called without an active exception" after the rank's work
// is done. So a collective here, which completes before it returns anyway, also waits until
// gloo's worker has let go of the Work and drops it on the calling thread (run()).
#include "sim.h"

#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/utils/pybind.h>

#include <chrono>
#include <optional>
#include <thread>
#include <type_traits>

namespace py = pybind11;

namespace npu_sim {
namespace {

using c10d::OpType;
using c10d::ReduceOp;
using c10d::Work;
using TensorList = std::vector<at::Tensor>;
using TensorLists = std::vector<std::vector<at::Tensor>>;

at::Tensor host(const at::Tensor& t) { return t.defined() && t.device().type() == kNpu ? cpu_alias(t) : t; }

TensorList host(const TensorList& ts) {
  TensorList out;
  out.reserve(ts.size());
  for (const auto& t : ts) out.push_back(host(t));
  return out;
}

TensorLists host(const TensorLists& ls) {
  TensorLists out;
  out.reserve(ls.size());
  for (const auto& l : ls) out.push_back(host(l));
  return out;
}

// gloo splits a buffer along dim 0 and wants the input's shape per rank; HCCL and NCCL only
// count elements (an output of (world, n) for an input of (n), as FSDP's buffers are).
at::Tensor flat_host(const at::Tensor& t) {
  auto h = host(t);
  return h.is_contiguous() ? h.view({-1}) : h;
}

TensorList flat(const TensorLists& ls) {
  TensorList out;
  for (const auto& l : ls) out.insert(out.end(), l.begin(), l.end());
  return out;
}

// A completed Work whose future holds `outputs` (on their npu device, as a device backend's
// future is: its callbacks may then use them on that device). Its own class, not
// Work::create_from_future: that one refuses wait() with a finite timeout, which callers
// written for NCCL/HCCL pass (Inductor's collective benchmarking waits with a timeout).
class DoneWork : public Work {
 public:
  DoneWork(TensorList outputs, c10::intrusive_ptr<c10::ivalue::Future> fut)
      : Work(-1, OpType::UNKNOWN), outputs_(std::move(outputs)), fut_(std::move(fut)) {
    finish();
  }
  bool wait(std::chrono::milliseconds /*timeout*/) override { return true; }  // done already
  std::vector<at::Tensor> result() override { return outputs_; }
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override { return fut_; }

 private:
  TensorList outputs_;
  c10::intrusive_ptr<c10::ivalue::Future> fut_;
};

c10::intrusive_ptr<Work> done(const TensorList& outputs) {
  std::vector<c10::Device> devices;
  for (const auto& t : outputs) {
    if (t.defined() && t.device().type() == kNpu &&
        std::find(devices.begin(), devices.end(), t.device()) == devices.end()) {
      devices.push_back(t.device());
    }
  }
  auto fut = c10::make_intrusive<c10::ivalue::Future>(c10::ListType::create(c10::TensorType::get()), devices);
  fut->markCompleted(c10::IValue(outputs));
  return c10::make_intrusive<DoneWork>(outputs, fut);
}

void check_not_capturing_op(const char* op) {
  // a graph records device work without running it; a collective cannot be recorded
  TORCH_CHECK(!is_capturing(), "npu-sim: collective ", op, " during npu graph capture is not supported");
}

template <typename T>
T enter(const char* op, const T& tensors) {
  check_not_capturing_op(op);
  return host(tensors);
}

// Wait until this thread holds the only reference to `work`: gloo's worker drops its own
// right after completing the Work (in runLoop), so this takes microseconds. Bounded: should
// something else keep the Work, the collective goes on (warned once) rather than stall.
void await_sole_owner(const c10::intrusive_ptr<Work>& work) {
  using clock = std::chrono::steady_clock;
  if (work.use_count() <= 1) return;
  const auto deadline = clock::now() + std::chrono::seconds(1);
  for (int spins = 0; work.use_count() > 1; ++spins) {
    if (clock::now() >= deadline) {
      TORCH_WARN_ONCE("npu-sim: a host backend Work is still referenced elsewhere 1 s after it completed; "
                      "it may be destroyed on gloo's worker thread");
      return;
    }
    if (spins < 64) {
      std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }
}

// Run a host backend Work to completion and destroy it on this thread (see the top of the file)
void run(c10::intrusive_ptr<Work> work) {
  if (!work) return;
  {
    // gloo's worker thread runs its ops (views, copies) under the caller's thread-local state;
    // with Python's dispatcher on (Inductor compiles under it: distributed autotuning's
    // all_gather_object) those ops take the GIL, so waiting for gloo while holding it deadlocks
    std::optional<py::gil_scoped_release> no_gil;
    if (Py_IsInitialized() && PyGILState_Check()) no_gil.emplace();
    try {
      work->wait();
    } catch (...) {
      await_sole_owner(work);
      throw;
    }
    await_sole_owner(work);
  }
  work.reset();  // the last reference: its Python objects are released here, GIL taken as needed
}

// gloo has no AVG: sum, then divide the results here (what HCCL's and NCCL's AVG give)
template <typename Opts>
Opts sum_for_avg(const Opts& opts) {
  Opts o = opts;
  if (o.reduceOp.op_ == ReduceOp::AVG) o.reduceOp = ReduceOp::SUM;
  return o;
}

void average(TensorList& host_outputs, const ReduceOp& op, int size) {
  if (op.op_ != ReduceOp::AVG) return;
  for (auto& t : host_outputs) {
    if (at::isIntegralType(t.scalar_type(), /*includeBool=*/true)) {
      t.div_(size, "trunc");
    } else {
      t.div_(size);
    }
  }
}

// A point-to-point Work in flight: gloo's, plus the npu tensors its CPU aliases point into.
class HeldWork : public Work {
 public:
  HeldWork(c10::intrusive_ptr<Work> inner, TensorList keep, OpType op)
      : Work(-1, op), inner_(std::move(inner)), keep_(std::move(keep)) {}
  bool isCompleted() override { return inner_->isCompleted(); }
  bool isSuccess() const override { return inner_->isSuccess(); }
  std::exception_ptr exception() const override { return inner_->exception(); }
  int sourceRank() const override { return inner_->sourceRank(); }
  std::vector<at::Tensor> result() override { return keep_; }
  bool wait(std::chrono::milliseconds timeout) override { return inner_->wait(timeout); }
  void abort() override { inner_->abort(); }
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override { return inner_->getFuture(); }

 private:
  c10::intrusive_ptr<Work> inner_;
  TensorList keep_;
};

class HostBackend : public c10d::Backend {
 public:
  HostBackend(c10::intrusive_ptr<c10d::Backend> inner, std::string name)
      : Backend(inner->getRank(), inner->getSize()), inner_(std::move(inner)), name_(std::move(name)) {}

  const std::string getBackendName() const override { return name_; }
  // the host backend's (torch reads them when it splits a group or makes a subgroup)
  c10::intrusive_ptr<Options> getBackendOptions() override { return inner_->getBackendOptions(); }
  c10::intrusive_ptr<c10d::Backend> inner() const { return inner_; }

  c10::intrusive_ptr<Work> broadcast(TensorList& tensors, const c10d::BroadcastOptions& opts) override {
    return in_place("broadcast", tensors, [&](TensorList& h) { return inner_->broadcast(h, opts); });
  }

  c10::intrusive_ptr<Work> allreduce(TensorList& tensors, const c10d::AllreduceOptions& opts) override {
    return in_place("allreduce", tensors, [&](TensorList& h) { return inner_->allreduce(h, sum_for_avg(opts)); },
                    opts.reduceOp);
  }

  c10::intrusive_ptr<Work> allreduce_coalesced(TensorList& tensors,
                                                const c10d::AllreduceCoalescedOptions& opts) override {
    return in_place("allreduce_coalesced", tensors,
                    [&](TensorList& h) { return inner_->allreduce_coalesced(h, sum_for_avg(opts)); }, opts.reduceOp);
  }

  c10::intrusive_ptr<Work> reduce(TensorList& tensors, const c10d::ReduceOptions& opts) override {
    // only the root receives the reduction
    return in_place("reduce", tensors, [&](TensorList& h) { return inner_->reduce(h, sum_for_avg(opts)); },
                    getRank() == opts.rootRank ? opts.reduceOp : ReduceOp(ReduceOp::SUM));
  }

  c10::intrusive_ptr<Work> allgather(TensorLists& outputs, TensorList& inputs,
                                     const c10d::AllgatherOptions& opts) override {
    return relay("allgather", outputs, inputs, [&](auto& o, auto& i) { return inner_->allgather(o, i, opts); });
  }

  c10::intrusive_ptr<Work> _allgather_base(at::Tensor& output, at::Tensor& input,
                                           const c10d::AllgatherOptions& opts) override {
    check_not_capturing_op("all_gather_into_tensor");
    auto ho = flat_host(output), hi = flat_host(input);
    run(inner_->_allgather_base(ho, hi, opts));
    return done({output});
  }

  c10::intrusive_ptr<Work> allgather_coalesced(TensorLists& outputs, TensorList& inputs,
                                               const c10d::AllgatherOptions& opts) override {
    return relay("allgather_coalesced", outputs, inputs,
                 [&](auto& o, auto& i) { return inner_->allgather_coalesced(o, i, opts); });
  }

  c10::intrusive_ptr<Work> allgather_into_tensor_coalesced(TensorList& outputs, TensorList& inputs,
                                                           const c10d::AllgatherOptions& opts) override {
    return relay("allgather_into_tensor_coalesced", outputs, inputs,
                 [&](auto& o, auto& i) { return inner_->allgather_into_tensor_coalesced(o, i, opts); });
  }

  c10::intrusive_ptr<Work> gather(TensorLists& outputs, TensorList& inputs,
                                  const c10d::GatherOptions& opts) override {
    return relay("gather", outputs, inputs, [&](auto& o, auto& i) { return inner_->gather(o, i, opts); });
  }

  c10::intrusive_ptr<Work> scatter(TensorList& outputs, TensorLists& inputs,
                                   const c10d::ScatterOptions& opts) override {
    return relay("scatter", outputs, inputs, [&](auto& o, auto& i) { return inner_->scatter(o, i, opts); });
  }

  c10::intrusive_ptr<Work> reduce_scatter(TensorList& outputs, TensorLists& inputs,
                                          const c10d::ReduceScatterOptions& opts) override {
    return relay("reduce_scatter", outputs, inputs,
                 [&](auto& o, auto& i) { return inner_->reduce_scatter(o, i, sum_for_avg(opts)); }, opts.reduceOp);
  }

  c10::intrusive_ptr<Work> _reduce_scatter_base(at::Tensor& output, at::Tensor& input,
                                                const c10d::ReduceScatterOptions& opts) override {
    TensorList outputs{output}, inputs{input};
    return reduce_scatter_tensors("reduce_scatter_tensor", outputs, inputs, opts);
  }

  c10::intrusive_ptr<Work> reduce_scatter_tensor_coalesced(TensorList& outputs, TensorList& inputs,
                                                           const c10d::ReduceScatterOptions& opts) override {
    return reduce_scatter_tensors("reduce_scatter_tensor_coalesced", outputs, inputs, opts);
  }

  c10::intrusive_ptr<Work> alltoall_base(at::Tensor& output, at::Tensor& input, std::vector<int64_t>& output_splits,
                                         std::vector<int64_t>& input_splits,
                                         const c10d::AllToAllOptions& opts) override {
    check_not_capturing_op("all_to_all_single");
    auto ho = host(output), hi = host(input);
    run(inner_->alltoall_base(ho, hi, output_splits, input_splits, opts));
    return done({output});
  }

  c10::intrusive_ptr<Work> alltoall(TensorList& outputs, TensorList& inputs,
                                    const c10d::AllToAllOptions& opts) override {
    return relay("all_to_all", outputs, inputs, [&](auto& o, auto& i) { return inner_->alltoall(o, i, opts); });
  }

  c10::intrusive_ptr<Work> barrier(const c10d::BarrierOptions& opts) override {
    check_not_capturing_op("barrier");
    run(inner_->barrier(opts));
    return done({});
  }

  void monitoredBarrier(const c10d::BarrierOptions& opts, bool wait_all_ranks) override {
    inner_->monitoredBarrier(opts, wait_all_ranks);
  }

  c10::intrusive_ptr<Work> send(TensorList& tensors, int dst, int tag) override {
    auto h = enter("send", tensors);
    return c10::make_intrusive<HeldWork>(inner_->send(h, dst, tag), tensors, OpType::SEND);
  }

  c10::intrusive_ptr<Work> recv(TensorList& tensors, int src, int tag) override {
    auto h = enter("recv", tensors);
    return c10::make_intrusive<HeldWork>(inner_->recv(h, src, tag), tensors, OpType::RECV);
  }

  c10::intrusive_ptr<Work> recvAnysource(TensorList& tensors, int tag) override {
    auto h = enter("recv", tensors);
    return c10::make_intrusive<HeldWork>(inner_->recvAnysource(h, tag), tensors, OpType::RECVANYSOURCE);
  }

  void setSequenceNumberForGroup() override { inner_->setSequenceNumberForGroup(); }
  uint64_t getSequenceNumberForGroup() override { return inner_->getSequenceNumberForGroup(); }
  void setTimeout(std::chrono::milliseconds timeout) override { inner_->setTimeout(timeout); }
  void abort() override { inner_->abort(); }
  void shutdown() override { inner_->shutdown(); }

 private:
  // A collective on `tensors` in place, over their host aliases; `avg` AVG divides the result
  // afterwards (gloo has no AVG: `call` asks for a SUM)
  template <typename Call>
  c10::intrusive_ptr<Work> in_place(const char* op, TensorList& tensors, Call call,
                                    const ReduceOp& avg = ReduceOp(ReduceOp::SUM)) {
    auto h = enter(op, tensors);
    run(call(h));
    average(h, avg, getSize());
    return done(tensors);
  }

  // Reduce-scatter of whole tensors: an all-reduce of a copy of each input, this rank's chunk
  // copied out (ProcessGroupGloo's own method). Done here rather than by gloo's
  // reduce_scatter_tensor_coalesced, whose Work wraps the all-reduce's (a closure holding it):
  // run() must hold gloo's Work itself to drop it on this thread. HCCL counts elements only, so
  // an output of n elements takes an input of world * n in any shape.
  c10::intrusive_ptr<Work> reduce_scatter_tensors(const char* op, TensorList& outputs, TensorList& inputs,
                                                  const c10d::ReduceScatterOptions& opts) {
    check_not_capturing_op(op);
    TORCH_CHECK(outputs.size() == inputs.size(), "npu-sim: ", op, " needs as many outputs as inputs");
    c10d::AllreduceOptions ar;
    ar.reduceOp = sum_for_avg(opts).reduceOp;
    ar.timeout = opts.timeout;
    for (size_t i = 0; i < outputs.size(); ++i) {
      TensorList out{host(outputs[i])};
      TensorList buffer{host(inputs[i]).clone(at::MemoryFormat::Contiguous).view({-1})};
      TORCH_CHECK(out[0].scalar_type() == buffer[0].scalar_type() && buffer[0].numel() == out[0].numel() * getSize(),
                  "npu-sim: ", op, " needs an input of the output's dtype and world size times its elements");
      run(inner_->allreduce(buffer, ar));
      out[0].copy_(buffer[0].chunk(getSize())[getRank()].view(out[0].sizes()));
      average(out, opts.reduceOp, getSize());
    }
    return done(outputs);
  }

  // A collective from `inputs` into `outputs`, over their host aliases (lists of lists are
  // handed back flat, as the device backends' Work results are)
  template <typename Out, typename In, typename Call>
  c10::intrusive_ptr<Work> relay(const char* op, Out& outputs, In& inputs, Call call,
                                 const ReduceOp& avg = ReduceOp(ReduceOp::SUM)) {
    auto ho = enter(op, outputs);
    auto hi = host(inputs);
    run(call(ho, hi));
    if constexpr (std::is_same_v<Out, TensorList>) {
      average(ho, avg, getSize());
      return done(outputs);
    } else {
      return done(flat(outputs));
    }
  }

  c10::intrusive_ptr<c10d::Backend> inner_;
  std::string name_;
};

}  // namespace

void bind_distributed(py::module& m) {
  // the base class is torch's own binding of c10d::Backend, so torch accepts this backend
  // (ProcessGroup._register_backend) and C++ callers (DDP, functional collectives) reach it
  if (!py::hasattr(py::module::import("torch._C"), "_distributed_c10d")) return;  // torch built without it
  auto base = py::module::import("torch._C._distributed_c10d").attr("Backend");
  py::class_<HostBackend, c10::intrusive_ptr<HostBackend>>(m, "_HostBackend", base)
      .def(py::init<c10::intrusive_ptr<c10d::Backend>, std::string>(), py::arg("inner"), py::arg("name"))
      .def_property_readonly("inner", &HostBackend::inner);
}

}  // namespace npu_sim
