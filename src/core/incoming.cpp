#include "src/core/incoming.hpp"

#include <cstdarg>
#include <cstdio>

#include "src/core/names.hpp"

namespace armci::incoming {
namespace {

Problem refuse(const char* call, const char* argument, const char* format, ...) __attribute__((format(printf, 3, 4)));
Problem refuse(const char* call, const char* argument, const char* format, ...) {
  Problem p;
  p.call = call;
  p.argument = argument;
  va_list ap;
  va_start(ap, format);
  std::vsnprintf(p.message, sizeof p.message, format, ap);
  va_end(ap);
  return p;
}

using ull = unsigned long long;

// Where [address, address + bytes) lies in this process, or nullptr when no
// region of the receiver holds all of it (or it has no mapping here).
std::byte* own_range(const FindOwn& find, std::uint64_t address, std::uint64_t bytes) {
  if (address > UINTPTR_MAX || bytes > SIZE_MAX) return nullptr;
  const Region* region = find(static_cast<std::uintptr_t>(address), static_cast<std::size_t>(bytes));
  if (region == nullptr || region->local == nullptr) return nullptr;
  return region->local + (static_cast<std::uintptr_t>(address) - region->base);
}

// The calls a vector message of each kind serves, for its errors.
constexpr Named<VectorKind> kVectorCalls[] = {{"ARMCI_PutS/PutV (vector message)", VectorKind::put},
                                              {"ARMCI_AccS/AccV (vector message)", VectorKind::acc},
                                              {"ARMCI_GetS/GetV (vector message)", VectorKind::get}};

}  // namespace

Problem parse_acc(int source, Bytes header_bytes, Bytes payload, const FindOwn& find, Acc& out) {
  constexpr const char* call = "ARMCI_Acc";
  if (header_bytes.size() < sizeof(wire::AccHeader))
    return refuse(call, "header", "a request from rank %d has a header of %zu bytes, not %zu", source,
                  header_bytes.size(), sizeof(wire::AccHeader));
  const auto header = wire::read<wire::AccHeader>(header_bytes.data());
  const std::size_t element = acc_element_size(header.datatype);
  if (element == 0)
    return refuse(call, "datatype", "argument 'datatype' of a request from rank %d is %d, which is not an ARMCI type",
                  source, header.datatype);
  if (header.bytes != payload.size())
    return refuse(call, "bytes", "argument 'bytes' of a request from rank %d is %llu but it carries %zu bytes", source,
                  static_cast<ull>(header.bytes), payload.size());
  if (header.bytes % element != 0)
    return refuse(call, "bytes", "argument 'bytes' of a request from rank %d (%llu) is not a whole number of %zu-byte "
                  "elements of type %d", source, static_cast<ull>(header.bytes), element, header.datatype);
  std::byte* to = own_range(find, header.address, header.bytes);
  if (to == nullptr)
    return refuse(call, "dst", "argument 'dst' of a request from rank %d (0x%llx, %llu bytes) is not inside any "
                  "ARMCI_Malloc region", source, static_cast<ull>(header.address), static_cast<ull>(header.bytes));
  out = Acc{header.token, header.datatype, header.scale, static_cast<std::uintptr_t>(header.address), to, payload};
  return {};
}

Problem parse_vector(VectorKind kind, int source, Bytes header_bytes, Bytes payload, const FindOwn& find,
                     std::size_t max_answer, Vector& out) {
  const char* call = name_of(kVectorCalls, kind);
  const bool is_get = kind == VectorKind::get;
  const char* argument = is_get ? "src" : "dst";
  if (header_bytes.size() < sizeof(wire::VectorHeader))
    return refuse(call, "header", "a message from rank %d has a header of %zu bytes, not %zu", source,
                  header_bytes.size(), sizeof(wire::VectorHeader));
  const auto header = wire::read<wire::VectorHeader>(header_bytes.data());
  std::size_t element = 1;
  if (kind == VectorKind::acc) {
    element = acc_element_size(header.datatype);
    if (element == 0)
      return refuse(call, "datatype", "argument 'datatype' of a message from rank %d is %d, which is not an ARMCI "
                    "type", source, header.datatype);
  }
  constexpr std::size_t kRecord = sizeof(wire::PieceRecord);
  // Every record takes kRecord bytes at least: a count beyond that is a lie,
  // found before looping over it.
  if (header.count > payload.size() / kRecord)
    return refuse(call, "count", "a message from rank %d says %u pieces but carries %zu bytes", source, header.count,
                  payload.size());
  std::size_t at = 0, answer = 0;
  for (std::uint32_t i = 0; i < header.count; ++i) {
    if (payload.size() - at < kRecord)
      return refuse(call, "count", "a message from rank %d ends inside piece %u of %u (%zu bytes)", source, i,
                    header.count, payload.size());
    const auto record = wire::read<wire::PieceRecord>(payload.data() + at);
    at += kRecord;
    if (record.length % element != 0)
      return refuse(call, "bytes", "argument 'bytes' of piece %u of a message from rank %d (%llu) is not a whole "
                    "number of %zu-byte elements", i, source, static_cast<ull>(record.length), element);
    if (own_range(find, record.address, record.length) == nullptr)
      return refuse(call, argument, "argument '%s' of piece %u of a message from rank %d (0x%llx, %llu bytes) is "
                    "not inside any ARMCI_Malloc region", argument, i, source, static_cast<ull>(record.address),
                    static_cast<ull>(record.length));
    if (is_get) {
      if (record.length > max_answer - answer)
        return refuse(call, "bytes", "a vector get from rank %d asks for more than the %zu bytes one answer holds "
                      "(piece %u)", source, max_answer, i);
      answer += static_cast<std::size_t>(record.length);
      continue;
    }
    // The data and its padding must be in the message (the length is
    // checked before it is padded, so the sum cannot wrap).
    const std::size_t room = payload.size() - at;
    if (record.length > room || wire::padded(static_cast<std::size_t>(record.length)) > room)
      return refuse(call, "bytes", "piece %u of a message from rank %d says %llu bytes but %zu remain", i, source,
                    static_cast<ull>(record.length), room);
    at += wire::padded(static_cast<std::size_t>(record.length));
  }
  if (at != payload.size())
    return refuse(call, "count", "a message from rank %d carries %zu bytes after its %u pieces", source,
                  payload.size() - at, header.count);
  out = Vector{header.token, header.count, header.datatype, header.scale, answer};
  return {};
}

void for_each_vector_piece(VectorKind kind, Bytes payload, std::uint32_t count, const FindOwn& find,
                           const std::function<void(const VectorPiece&)>& f) {
  std::size_t at = 0;
  for (std::uint32_t i = 0; i < count; ++i) {
    const auto record = wire::read<wire::PieceRecord>(payload.data() + at);
    at += sizeof(wire::PieceRecord);
    VectorPiece piece;
    piece.address = static_cast<std::uintptr_t>(record.address);
    piece.length = static_cast<std::size_t>(record.length);
    piece.at = own_range(find, record.address, record.length);
    if (kind != VectorKind::get) {
      piece.data = payload.subspan(at, piece.length);
      at += wire::padded(piece.length);
    }
    f(piece);
  }
}

Problem parse_host(bool is_get, int source, Bytes header_bytes, Bytes payload, const FindOwn& find, Host& out) {
  const char* call = is_get ? "ARMCI_GetS (host-assisted)" : "ARMCI_PutS (host-assisted)";
  if (header_bytes.size() < sizeof(wire::HostHeader))
    return refuse(call, "header", "a request from rank %d has a header of %zu bytes, not %zu", source,
                  header_bytes.size(), sizeof(wire::HostHeader));
  out.header = wire::read<wire::HostHeader>(header_bytes.data());
  const wire::HostHeader& h = out.header;
  if (h.levels < 0 || h.levels > strided::kMaxLevels)
    return refuse(call, "stride_levels", "argument 'stride_levels' of a request from rank %d is %d, outside [0, %d]",
                  source, h.levels, strided::kMaxLevels);
  // The receiver's side is the one whose pieces must not overlap: the
  // layout check names it the destination.
  if (strided::Problem p = strided::check(h.origin_stride, h.target_stride, h.count, h.levels, out.shape))
    return refuse(call, p.argument, "a request from rank %d: %s", source, p.message);
  out.mine = own_range(find, h.target_base, static_cast<std::uint64_t>(out.shape.dst_extent));
  if (out.mine == nullptr)
    return refuse(call, is_get ? "src_ptr" : "dst_ptr", "argument '%s' of a request from rank %d (0x%llx, %lld "
                  "bytes) is not inside any ARMCI_Malloc region", is_get ? "src_ptr" : "dst_ptr", source,
                  static_cast<ull>(h.target_base), static_cast<long long>(out.shape.dst_extent));
  // The origin's side is reached through its key, which the network checks;
  // its addresses must not wrap.
  if (h.origin_base > UINT64_MAX - static_cast<std::uint64_t>(out.shape.src_extent))
    return refuse(call, is_get ? "dst_ptr" : "src_ptr", "the origin's side of a request from rank %d wraps around "
                  "the address space", source);
  if (payload.empty())
    return refuse(call, "key", "a request from rank %d carries no key for its side", source);
  out.key = payload;
  return {};
}

Problem refuse_header_size(const char* call, const char* what, int source, std::size_t got, std::size_t want) {
  return refuse(call, "header", "%s from rank %d has a header of %zu bytes, not %zu", what, source, got, want);
}

Problem parse_ack(const char* call, int source, Bytes header, wire::AckHeader& out) {
  return parse_fixed(call, "an ack or answer", source, header, out);
}

Problem parse_collective(int source, Bytes header, Bytes payload, int channels, wire::CollectiveHeader& out) {
  constexpr const char* call = "armci_msg (network message)";
  if (header.size() < sizeof(wire::CollectiveHeader))
    return refuse(call, "header", "a message from rank %d has a header of %zu bytes, not %zu", source, header.size(),
                  sizeof(wire::CollectiveHeader));
  out = wire::read<wire::CollectiveHeader>(header.data());
  if (out.channel >= channels)
    return refuse(call, "channel", "a message from rank %d names channel %u of %d", source, out.channel, channels);
  if (out.sequence == 0)
    return refuse(call, "sequence", "a message from rank %d has sequence number 0", source);
  if (payload.size() > out.total)
    return refuse(call, "total", "a piece of %zu bytes from rank %d belongs to a message of %llu bytes", payload.size(),
                  source, static_cast<ull>(out.total));
  return {};
}

}  // namespace armci::incoming
