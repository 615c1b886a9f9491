// Incoming control messages: the checks a target makes on what a peer sent
// before it touches any memory. Pure: each parser reads a header and a
// payload as bytes, looks addresses up in what the receiver owns (a lookup
// function, so tests pass a table of their own), and either accepts the
// message, returning where every piece goes, or rejects it with a message
// that names the call, the argument and the sending rank. Nothing in a
// message is trusted: header sizes, counts, lengths, offsets, data types,
// layouts and channels are all checked, with overflow in mind, and the
// whole message is checked before any of it is applied.
//
// Called by: the message handlers (Messages, Transfers, VectorMessages,
// HostAssisted, Collectives); tests/unit/test_incoming.cpp fuzzes them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>

#include "src/core/acc.hpp"
#include "src/core/region_table.hpp"
#include "src/core/strided.hpp"
#include "src/core/wire.hpp"

namespace armci::incoming {

// Why a message was refused; empty when it was accepted.
struct Problem {
  const char* call = nullptr;      // nullptr: accepted
  const char* argument = nullptr;  // the field at fault
  char message[224] = {};
  explicit operator bool() const { return call != nullptr; }
};

// The receiver's region holding [address, address + bytes), or nullptr.
using FindOwn = std::function<const Region*(std::uintptr_t address, std::size_t bytes)>;

using Bytes = std::span<const std::byte>;

// An Acc of one contiguous range (the "acc" kind).
struct Acc {
  std::uint64_t token = 0;
  int datatype = 0;
  AccScale scale{};
  std::uintptr_t address = 0;  // in the receiver's address space (Acc stripes)
  std::byte* to = nullptr;     // where it lands in this process
  Bytes data;
};
Problem parse_acc(int source, Bytes header, Bytes payload, const FindOwn& find, Acc& out);

// A vector message (vector-put, vector-acc, vector-get): the header, then
// `count` records, each followed for put and acc by its data padded to 8.
enum class VectorKind { put, acc, get };
struct Vector {
  std::uint64_t token = 0;
  std::uint32_t count = 0;
  int datatype = 0;
  AccScale scale{};
  std::size_t answer_bytes = 0;  // get: the bytes of the answer
};
// One piece of an accepted vector message. For get, `data` is empty and
// `at` is what to read.
struct VectorPiece {
  std::uintptr_t address = 0;
  std::byte* at = nullptr;
  std::size_t length = 0;
  Bytes data;
};
// Checks the whole message; `max_answer` bounds what a get may ask for
// (its answer must fit one message of the layer).
Problem parse_vector(VectorKind kind, int source, Bytes header, Bytes payload, const FindOwn& find,
                     std::size_t max_answer, Vector& out);
// The pieces of a message parse_vector accepted, in order.
void for_each_vector_piece(VectorKind kind, Bytes payload, std::uint32_t count, const FindOwn& find,
                           const std::function<void(const VectorPiece&)>& f);

// A host-assisted strided request: the layout, checked, and where the
// receiver's side starts; the payload is the origin's packed key.
struct Host {
  wire::HostHeader header{};
  strided::Shape shape{};
  std::byte* mine = nullptr;
  Bytes key;
};
Problem parse_host(bool is_get, int source, Bytes header, Bytes payload, const FindOwn& find, Host& out);

// A header that is one fixed struct (what: "a word claim", ...): its size
// is checked, then it is copied out; what its fields mean is the caller's.
Problem refuse_header_size(const char* call, const char* what, int source, std::size_t got, std::size_t want);
template <typename Header>
Problem parse_fixed(const char* call, const char* what, int source, Bytes header, Header& out) {
  if (header.size() < sizeof(Header)) return refuse_header_size(call, what, source, header.size(), sizeof(Header));
  out = wire::read<Header>(header.data());
  return {};
}

// An ack or an answer's header: only its size can be checked here (the
// token is the receiver's own, see Messages).
Problem parse_ack(const char* call, int source, Bytes header, wire::AckHeader& out);

// A collective message: its channel and the bytes it says the whole
// message has, which this piece must not exceed.
Problem parse_collective(int source, Bytes header, Bytes payload, int channels, wire::CollectiveHeader& out);

}  // namespace armci::incoming
