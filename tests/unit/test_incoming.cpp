// The parsers of incoming control messages (src/core/incoming): hand-made bad
// messages, each refused naming its field and the sender, and a seeded fuzzer
// that feeds a million valid, mutated and random messages and checks that
// whatever is accepted stays inside the receiver's regions and the message
// (the apply step really writes there, so ASan sees any stray byte) and that
// whatever is refused says why. ARMCI_FUZZ_ITERATIONS and ARMCI_FUZZ_SEED
// change the run; a failure prints the seed and the iteration.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "include/armci.h"
#include "src/core/incoming.hpp"

namespace incoming = armci::incoming;
namespace wire = armci::wire;
using armci::Region;
using armci::RegionTable;
using incoming::Bytes;
using incoming::VectorKind;

namespace {

constexpr int kSource = 7;  // the sender every message names
constexpr int kChannels = 2;
constexpr std::size_t kMaxAnswer = 8192;

// The receiver: three regions at fake addresses, the first two adjacent (a
// range across both is in neither), the last ending at the top of the
// address space (wrap-around). Each is backed by a heap block of exactly
// its size, so ASan reports a byte outside.
struct Receiver {
  struct Backing {
    std::uintptr_t base;
    std::size_t size;
    std::unique_ptr<std::byte[]> memory;
  };
  std::vector<Backing> backing;
  RegionTable table{1};
  incoming::FindOwn find;

  Receiver() {
    add(0x10000000, 4096);
    add(0x10001000, 256);
    add(UINTPTR_MAX - 4095, 4096);
    find = [this](std::uintptr_t a, std::size_t n) { return table.find_without_caching(0, a, n); };
  }
  void add(std::uintptr_t base, std::size_t size) {
    backing.push_back({base, size, std::make_unique<std::byte[]>(size)});
    Region r;
    r.base = base;
    r.size = size;
    r.local = backing.back().memory.get();
    table.insert(0, r);
  }
  bool inside(const std::byte* p, std::size_t n) const {
    for (const Backing& b : backing)
      if (p >= b.memory.get() && p <= b.memory.get() + b.size && n <= static_cast<std::size_t>(b.memory.get() + b.size - p))
        return true;
    return false;
  }
};

template <typename T>
void append(std::vector<std::byte>& v, const T& value) {
  const auto* b = reinterpret_cast<const std::byte*>(&value);
  v.insert(v.end(), b, b + sizeof value);
}

template <typename T>
std::vector<std::byte> bytes_of(const T& value) {
  std::vector<std::byte> v;
  append(v, value);
  return v;
}

bool names(const incoming::Problem& p, const char* argument) {
  return p && p.argument != nullptr && std::strcmp(p.argument, argument) == 0 &&
         std::string(p.message).find("rank 7") != std::string::npos;
}

// ------------------------------------------------------------ hand-made

TEST(Incoming, AccAcceptsAWholeRange) {
  Receiver r;
  wire::AccHeader h{};
  h.address = 0x10000000 + 8;
  h.bytes = 16;
  h.datatype = ARMCI_ACC_DBL;
  std::vector<std::byte> payload(16);
  incoming::Acc acc;
  ASSERT_FALSE(incoming::parse_acc(kSource, bytes_of(h), payload, r.find, acc));
  EXPECT_EQ(acc.to, r.backing[0].memory.get() + 8);
  EXPECT_EQ(acc.data.size(), 16u);
}

TEST(Incoming, AccRefusesEachBadField) {
  Receiver r;
  incoming::Acc acc;
  auto try_acc = [&](std::uint64_t address, std::uint64_t bytes, int type, std::size_t payload) {
    wire::AccHeader h{};
    h.address = address;
    h.bytes = bytes;
    h.datatype = type;
    return incoming::parse_acc(kSource, bytes_of(h), std::vector<std::byte>(payload), r.find, acc);
  };
  EXPECT_TRUE(names(try_acc(0x10000000, 16, 99, 16), "datatype"));
  EXPECT_TRUE(names(try_acc(0x10000000, 16, -1, 16), "datatype"));
  // An op the type has not (a bitwise op on doubles).
  EXPECT_TRUE(names(try_acc(0x10000000, 16, armci::acc_datatype(ARMCI_ACC_DBL, armci::AccOp::band), 16), "datatype"));
  EXPECT_TRUE(names(try_acc(0x10000000, 16, ARMCI_ACC_INT, 12), "bytes"));
  EXPECT_TRUE(names(try_acc(0x10000000, 6, ARMCI_ACC_INT, 6), "bytes"));  // not whole ints
  EXPECT_TRUE(names(try_acc(0x10000000 + 4088, 16, ARMCI_ACC_INT, 16), "dst"));  // across two regions
  EXPECT_TRUE(names(try_acc(0x0fffffff, 8, ARMCI_ACC_INT, 8), "dst"));
  EXPECT_TRUE(names(try_acc(UINT64_MAX - 3, 8, ARMCI_ACC_INT, 8), "dst"));  // wraps
  wire::AccHeader h{};
  EXPECT_TRUE(names(incoming::parse_acc(kSource, Bytes(bytes_of(h)).first(20), {}, r.find, acc), "header"));
}

std::vector<std::byte> vector_payload(const std::vector<std::pair<std::uint64_t, std::uint64_t>>& pieces,
                                      bool with_data) {
  std::vector<std::byte> v;
  for (auto [address, length] : pieces) {
    append(v, wire::PieceRecord{address, length});
    if (with_data) v.resize(v.size() + wire::padded(length));
  }
  return v;
}

incoming::Problem try_vector(Receiver& r, VectorKind kind, std::uint32_t count, int type,
                             const std::vector<std::byte>& payload, incoming::Vector& out) {
  wire::VectorHeader h{};
  h.count = count;
  h.datatype = type;
  return incoming::parse_vector(kind, kSource, bytes_of(h), payload, r.find, kMaxAnswer, out);
}

TEST(Incoming, VectorAcceptsAndYieldsThePieces) {
  Receiver r;
  incoming::Vector v;
  const auto payload = vector_payload({{0x10000000, 5}, {0x10001000, 256}, {0x10000010, 0}}, true);
  ASSERT_FALSE(try_vector(r, VectorKind::put, 3, 0, payload, v));
  std::vector<std::size_t> lengths;
  incoming::for_each_vector_piece(VectorKind::put, payload, v.count, r.find, [&](const incoming::VectorPiece& p) {
    EXPECT_TRUE(r.inside(p.at, p.length));
    lengths.push_back(p.length);
  });
  EXPECT_EQ(lengths, (std::vector<std::size_t>{5, 256, 0}));
  ASSERT_FALSE(try_vector(r, VectorKind::get, 2, 0, vector_payload({{0x10000000, 5}, {0x10001000, 256}}, false), v));
  EXPECT_EQ(v.answer_bytes, 261u);
}

TEST(Incoming, VectorRefusesEachBadField) {
  Receiver r;
  incoming::Vector v;
  const auto one = vector_payload({{0x10000000, 8}}, true);
  EXPECT_TRUE(names(try_vector(r, VectorKind::put, 2, 0, one, v), "count"));           // count beyond the records
  EXPECT_TRUE(names(try_vector(r, VectorKind::put, UINT32_MAX, 0, one, v), "count"));  // a count that would loop long
  EXPECT_TRUE(names(try_vector(r, VectorKind::put, 0, 0, one, v), "count"));           // bytes after the pieces
  // A length whose padding wraps, and one past the message.
  EXPECT_TRUE(names(try_vector(r, VectorKind::put, 1, 0, vector_payload({{0x10000000, UINT64_MAX}}, false), v),
                    "dst"));
  auto long_piece = vector_payload({{0x10000000, 8}}, false);
  long_piece.resize(long_piece.size() + 4);
  EXPECT_TRUE(names(try_vector(r, VectorKind::put, 1, 0, long_piece, v), "bytes"));
  EXPECT_TRUE(names(try_vector(r, VectorKind::put, 1, 0, vector_payload({{0x10000ff8, 16}}, true), v), "dst"));
  EXPECT_TRUE(names(try_vector(r, VectorKind::acc, 1, 77, one, v), "datatype"));
  EXPECT_TRUE(names(try_vector(r, VectorKind::acc, 1, ARMCI_ACC_DBL, vector_payload({{0x10000000, 12}}, true), v),
                    "bytes"));
  EXPECT_TRUE(names(try_vector(r, VectorKind::get, 1, 0, vector_payload({{0x0fff0000, 8}}, false), v), "src"));
  // A get whose answer would not fit one message, and one whose pieces'
  // total wraps around.
  EXPECT_TRUE(names(try_vector(r, VectorKind::get, 3, 0,
                               vector_payload({{0x10000000, 4096}, {0x10000000, 4096}, {0x10000000, 8}}, false), v),
                    "bytes"));
  wire::VectorHeader h{};
  EXPECT_TRUE(names(incoming::parse_vector(VectorKind::put, kSource, Bytes(bytes_of(h)).first(8), {}, r.find,
                                           kMaxAnswer, v),
                    "header"));
}

wire::HostHeader host_header(std::uint64_t target, int levels, std::vector<int> count, std::vector<int> tstride,
                             std::vector<int> ostride) {
  wire::HostHeader h{};
  h.token = 1;
  h.target_base = target;
  h.origin_base = 0x5000;
  h.levels = levels;
  for (std::size_t i = 0; i < count.size(); ++i) h.count[i] = count[i];
  for (std::size_t i = 0; i < tstride.size(); ++i) h.target_stride[i] = tstride[i];
  for (std::size_t i = 0; i < ostride.size(); ++i) h.origin_stride[i] = ostride[i];
  return h;
}

TEST(Incoming, HostChecksTheLayout) {
  Receiver r;
  incoming::Host out;
  const std::vector<std::byte> key(16);
  auto parse = [&](const wire::HostHeader& h) { return incoming::parse_host(false, kSource, bytes_of(h), key, r.find, out); };
  ASSERT_FALSE(parse(host_header(0x10000000, 2, {8, 4, 3}, {16, 64}, {8, 32})));
  EXPECT_EQ(out.shape.pieces, 12);
  EXPECT_EQ(out.mine, r.backing[0].memory.get());
  EXPECT_TRUE(names(parse(host_header(0x10000000, 9, {8}, {}, {})), "stride_levels"));
  EXPECT_TRUE(names(parse(host_header(0x10000000, -1, {8}, {}, {})), "stride_levels"));
  EXPECT_TRUE(names(parse(host_header(0x10000000, 1, {-8, 2}, {16}, {16})), "count"));
  EXPECT_TRUE(names(parse(host_header(0x10000000, 1, {8, 0}, {16}, {16})), "count"));
  EXPECT_TRUE(names(parse(host_header(0x10000000, 1, {8, 2}, {4}, {16})), "dst_stride_ar"));  // overlap
  EXPECT_TRUE(names(parse(host_header(0x10000000, 1, {8, 2}, {-16}, {16})), "dst_stride_ar"));
  EXPECT_TRUE(names(parse(host_header(0x10000000, 1, {8, 600}, {8}, {8})), "dst_ptr"));  // past the region
  EXPECT_TRUE(names(parse(host_header(0x10000000, 3, {1 << 30, 1 << 30, 1 << 30, 1 << 30}, {1 << 30, INT32_MAX, INT32_MAX},
                                      {1 << 30, INT32_MAX, INT32_MAX})),
                    "dst_stride_ar"));  // extents past 2^63
  auto wraps = host_header(0x10000000, 0, {64}, {}, {});
  wraps.origin_base = UINT64_MAX - 8;
  EXPECT_TRUE(names(parse(wraps), "src_ptr"));
  EXPECT_TRUE(names(incoming::parse_host(false, kSource, bytes_of(host_header(0x10000000, 0, {8}, {}, {})), {}, r.find, out),
                    "key"));
}

TEST(Incoming, AckAndCollectiveHeaders) {
  wire::AckHeader ack;
  EXPECT_FALSE(incoming::parse_ack("ack", kSource, bytes_of(wire::AckHeader{1, 2}), ack));
  EXPECT_TRUE(names(incoming::parse_ack("ack", kSource, Bytes(bytes_of(wire::AckHeader{1, 2})).first(15), ack), "header"));
  wire::CollectiveHeader c{1, 5, 100, 3};
  wire::CollectiveHeader out;
  EXPECT_FALSE(incoming::parse_collective(kSource, bytes_of(c), std::vector<std::byte>(100), kChannels, out));
  EXPECT_TRUE(names(incoming::parse_collective(kSource, bytes_of(c), std::vector<std::byte>(101), kChannels, out), "total"));
  c.channel = 2;
  EXPECT_TRUE(names(incoming::parse_collective(kSource, bytes_of(c), {}, kChannels, out), "channel"));
  c.channel = 0;
  c.sequence = 0;
  EXPECT_TRUE(names(incoming::parse_collective(kSource, bytes_of(c), {}, kChannels, out), "sequence"));
}

// --------------------------------------------------------------- fuzzer

struct Fuzzer {
  Receiver& r;
  std::mt19937_64 rng;
  std::uint64_t below(std::uint64_t n) { return n == 0 ? 0 : rng() % n; }

  // An address and length inside one region (or, now and then, near one).
  std::pair<std::uint64_t, std::uint64_t> range(std::size_t element) {
    const auto& b = r.backing[below(r.backing.size())];
    const std::uint64_t elements = b.size / element;
    const std::uint64_t n = below(std::min<std::uint64_t>(elements, 64) + 1);
    const std::uint64_t at = below(elements - n + 1);
    return {b.base + at * element, n * element};
  }
  int acc_type() {
    static const int base[] = {ARMCI_ACC_INT, ARMCI_ACC_LNG, ARMCI_ACC_FLT, ARMCI_ACC_DBL, ARMCI_ACC_CPL, ARMCI_ACC_DCP};
    const int type = base[below(6)];
    const auto op = static_cast<armci::AccOp>(below(7));
    return armci::acc_op_defined(type, op) ? armci::acc_datatype(type, op) : type;
  }
  void random_bytes(std::vector<std::byte>& v, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) v.push_back(static_cast<std::byte>(rng()));
  }

  // A value a field could be set to that sits on an edge.
  std::uint64_t interesting() {
    const auto& b = r.backing[below(r.backing.size())];
    const std::uint64_t values[] = {0, 1, 7, 8, 16, 255, 256, 4095, 4096, 4097, UINT32_MAX, 1ull << 31, 1ull << 32,
                                    1ull << 63, UINT64_MAX, UINT64_MAX - 7, b.base, b.base + b.size,
                                    b.base + b.size - 1, b.base - 8, static_cast<std::uint64_t>(-static_cast<std::int64_t>(b.size))};
    return values[below(std::size(values))] + (below(4) == 0 ? below(16) - 8 : 0);
  }

  void mutate(std::vector<std::byte>& v) {
    switch (below(6)) {
      case 0:
        if (!v.empty()) v[below(v.size())] ^= static_cast<std::byte>(1u << below(8));
        break;
      case 1:
        for (int k = 0; k < 4 && !v.empty(); ++k) v[below(v.size())] = static_cast<std::byte>(rng());
        break;
      case 2:
        if (v.size() >= 8) {
          const std::uint64_t value = interesting();
          const std::size_t at = below(v.size() / 8) * 8;
          std::memcpy(v.data() + at, &value, 8);
        }
        break;
      case 3:
        if (v.size() >= 4) {
          const auto value = static_cast<std::uint32_t>(interesting());
          const std::size_t at = below(v.size() / 4) * 4;
          std::memcpy(v.data() + at, &value, 4);
        }
        break;
      case 4: v.resize(below(v.size() + 1)); break;
      default: random_bytes(v, 1 + below(24)); break;
    }
  }

  // Builds one message of `kind` (0 acc, 1-3 vector put/acc/get, 4-5 host
  // put/get, 6 collective, 7 ack), valid before mutation.
  void make(int kind, std::vector<std::byte>& header, std::vector<std::byte>& payload) {
    header.clear();
    payload.clear();
    switch (kind) {
      case 0: {
        wire::AccHeader h{};
        h.datatype = acc_type();
        auto [address, bytes] = range(armci::acc_element_size(h.datatype));
        h.address = address;
        h.bytes = bytes;
        h.token = rng();
        append(header, h);
        random_bytes(payload, bytes);
        return;
      }
      case 1:
      case 2:
      case 3: {
        wire::VectorHeader h{};
        h.datatype = kind == 2 ? acc_type() : 0;
        const std::size_t element = kind == 2 ? armci::acc_element_size(h.datatype) : 1;
        h.count = static_cast<std::uint32_t>(below(12));
        h.token = rng();
        append(header, h);
        for (std::uint32_t i = 0; i < h.count; ++i) {
          auto [address, length] = range(element);
          append(payload, wire::PieceRecord{address, length});
          if (kind != 3) {
            random_bytes(payload, length);
            payload.resize(payload.size() + wire::padded(length) - length);
          }
        }
        return;
      }
      case 4:
      case 5: {
        const auto& b = r.backing[below(r.backing.size())];
        wire::HostHeader h{};
        h.levels = static_cast<int>(below(4));
        h.count[0] = static_cast<int>(1 + below(16));
        for (int i = 1; i <= h.levels; ++i) h.count[i] = static_cast<int>(1 + below(4));
        for (int i = 0; i < h.levels; ++i) {
          h.target_stride[i] = static_cast<int>(armci::strided::extent(h.target_stride, h.count, i) + below(8));
          h.origin_stride[i] = static_cast<int>(armci::strided::extent(h.origin_stride, h.count, i) + below(8));
        }
        const std::int64_t extent = armci::strided::extent(h.target_stride, h.count, h.levels);
        const auto& in = extent <= static_cast<std::int64_t>(b.size) ? b : r.backing[0];  // the 4 KiB one fits all
        h.target_base = in.base + below(in.size - static_cast<std::size_t>(extent) + 1);
        h.origin_base = rng() >> 1;
        h.token = rng();
        append(header, h);
        random_bytes(payload, 1 + below(40));
        return;
      }
      case 6: {
        wire::CollectiveHeader h{static_cast<std::uint8_t>(below(kChannels)), static_cast<std::int32_t>(rng()),
                                 below(4096), 1 + below(100)};
        append(header, h);
        random_bytes(payload, below(h.total + 1));
        return;
      }
      default: append(header, wire::AckHeader{rng(), below(256)}); return;
    }
  }

  // Parses one message; when accepted, applies it the way the handler
  // does, checking first that every byte it touches is the receiver's or
  // the message's. Returns whether it was accepted.
  bool parse_and_apply(int kind, const std::vector<std::byte>& header, const std::vector<std::byte>& payload) {
    const Bytes h(header), p(payload);
    auto refused = [&](const incoming::Problem& problem) {
      EXPECT_NE(problem.argument, nullptr);
      EXPECT_NE(std::string(problem.message).find("rank 7"), std::string::npos) << problem.message;
      return false;
    };
    auto in_message = [&](Bytes data) {
      return data.empty() || (data.data() >= p.data() && data.data() + data.size() <= p.data() + p.size());
    };
    switch (kind) {
      case 0: {
        incoming::Acc acc;
        if (auto problem = incoming::parse_acc(kSource, h, p, r.find, acc)) return refused(problem);
        EXPECT_TRUE(r.inside(acc.to, acc.data.size()));
        EXPECT_TRUE(in_message(acc.data));
        EXPECT_EQ(acc.data.size() % armci::acc_element_size(acc.datatype), 0u);
        armci::accumulate(acc.datatype, acc.scale, acc.to, acc.data.data(), acc.data.size());
        return true;
      }
      case 1:
      case 2:
      case 3: {
        const VectorKind vk = kind == 1 ? VectorKind::put : kind == 2 ? VectorKind::acc : VectorKind::get;
        incoming::Vector v;
        if (auto problem = incoming::parse_vector(vk, kSource, h, p, r.find, kMaxAnswer, v)) return refused(problem);
        std::vector<std::byte> answer(v.answer_bytes);
        std::size_t at = 0;
        incoming::for_each_vector_piece(vk, p, v.count, r.find, [&](const incoming::VectorPiece& piece) {
          EXPECT_TRUE(r.inside(piece.at, piece.length));
          if (vk == VectorKind::get) {
            ASSERT_LE(piece.length, answer.size() - at);
            if (piece.length != 0) std::memcpy(answer.data() + at, piece.at, piece.length);
            at += piece.length;
            return;
          }
          EXPECT_TRUE(in_message(piece.data));
          EXPECT_EQ(piece.data.size(), piece.length);
          if (vk == VectorKind::acc)
            armci::accumulate(v.datatype, v.scale, piece.at, piece.data.data(), piece.length);
          else if (piece.length != 0)
            std::memcpy(piece.at, piece.data.data(), piece.length);
        });
        if (vk == VectorKind::get) {
          EXPECT_EQ(at, v.answer_bytes);
        }
        return true;
      }
      case 4:
      case 5: {
        incoming::Host out;
        if (auto problem = incoming::parse_host(kind == 5, kSource, h, p, r.find, out)) return refused(problem);
        EXPECT_TRUE(r.inside(out.mine, static_cast<std::size_t>(out.shape.dst_extent)));
        EXPECT_TRUE(in_message(out.key));
        const wire::HostHeader& hh = out.header;
        armci::strided::for_each_piece(hh.target_stride, hh.origin_stride, hh.count, hh.levels,
                                       [&](std::int64_t mine, std::int64_t, std::size_t n) {
                                         EXPECT_TRUE(r.inside(out.mine + mine, n));
                                         std::memset(out.mine + mine, 0x5a, n);
                                       });
        return true;
      }
      case 6: {
        wire::CollectiveHeader c;
        if (auto problem = incoming::parse_collective(kSource, h, p, kChannels, c)) return refused(problem);
        EXPECT_LT(c.channel, kChannels);
        EXPECT_LE(p.size(), c.total);
        return true;
      }
      default: {
        wire::AckHeader a;
        if (auto problem = incoming::parse_ack("ack", kSource, h, a)) return refused(problem);
        return true;
      }
    }
  }
};

std::uint64_t env_or(const char* name, std::uint64_t fallback) {
  const char* s = std::getenv(name);
  return s != nullptr && *s != 0 ? std::strtoull(s, nullptr, 0) : fallback;
}

TEST(IncomingFuzz, NeverStraysAndExplainsEveryRefusal) {
  const std::uint64_t seed = env_or("ARMCI_FUZZ_SEED", 0x1c0331a6);
  const std::uint64_t iterations = env_or("ARMCI_FUZZ_ITERATIONS", 1000000);
  Receiver r;
  Fuzzer f{r, std::mt19937_64(seed)};
  std::vector<std::byte> header, payload;
  std::uint64_t accepted[8] = {}, refused[8] = {}, valid_accepted = 0;
  for (std::uint64_t i = 0; i < iterations; ++i) {
    SCOPED_TRACE("ARMCI_FUZZ_SEED=" + std::to_string(seed) + " iteration " + std::to_string(i));
    const int kind = static_cast<int>(f.below(8));
    f.make(kind, header, payload);
    const std::uint64_t how = f.below(8);
    if (how == 0) {
      // Unmutated: a well-formed message must be accepted.
      const bool ok = f.parse_and_apply(kind, header, payload);
      ASSERT_TRUE(ok) << "kind " << kind;
      ++valid_accepted;
      continue;
    }
    for (std::uint64_t m = 0; m < 1 + f.below(3); ++m) f.mutate(f.below(2) ? header : payload);
    if (how == 7) {  // noise of any length
      header.clear();
      payload.clear();
      f.random_bytes(header, f.below(200));
      f.random_bytes(payload, f.below(600));
    }
    (f.parse_and_apply(kind, header, payload) ? accepted : refused)[kind]++;
    if (::testing::Test::HasFailure()) break;
  }
  // The fuzzer must reach the appliers, not only the first check.
  for (int kind = 0; kind < 8; ++kind) {
    EXPECT_GT(accepted[kind], iterations / 1000) << "kind " << kind << " never accepted after mutation";
    EXPECT_GT(refused[kind], iterations / 1000) << "kind " << kind << " never refused";
  }
  EXPECT_GT(valid_accepted, 0u);
}

}  // namespace
