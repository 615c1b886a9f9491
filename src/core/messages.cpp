#include "src/core/messages.hpp"

#include "src/core/error.hpp"
#include "src/core/incoming.hpp"
#include "src/core/wire.hpp"

namespace armci {

Messages::Messages(Progress& progress, int size)
    : progress_(progress),
      in_flight_(std::make_unique<std::atomic<std::int64_t>[]>(static_cast<std::size_t>(size))),
      effects_pending_(std::make_unique<std::atomic<std::int64_t>[]>(static_cast<std::size_t>(size))) {
  kinds_.push_back({"(none)", {}});  // id 0 stays unused: a zeroed header names no kind
  ack_ = add("ack", [this](int source, auto header, auto) { handle_ack(source, header); });
}

MessageKind Messages::add(std::string name, Handler handler, AckHandler on_ack, Fenced fenced) {
  // The platform's ids are 8 bits, and the layers reserve the top one.
  if (kinds_.size() >= 255) fail("ARMCI_Init", "internal: too many message kinds (adding '%s')", name.c_str());
  const auto id = static_cast<MessageKind>(kinds_.size());
  kinds_.push_back({std::move(name), std::move(on_ack), fenced});
  if (progress_.has_network())
    progress_.with_network([&](platform::Network& net) { net.set_message_handler(id, std::move(handler)); });
  return id;
}

void Messages::send_ack(int source, MessageKind kind, std::uint64_t token) {
  // The ack's own completion is not waited for: it is a small eager
  // message, and the layer keeps it until it is sent.
  static platform::Completion acks_sent;
  wire::AckHeader ack{token, kind};
  progress_.network_locked().send_message(source, ack_, std::as_bytes(std::span(&ack, 1)), {}, acks_sent);
}

void Messages::handle_ack(int source, std::span<const std::byte> header) {
  wire::AckHeader ack;
  if (incoming::Problem p = incoming::parse_ack("ARMCI (ack)", source, header, ack)) fail(p.call, "%s", p.message);
  if (ack.kind == 0 || ack.kind >= kinds_.size() || !kinds_[ack.kind].on_ack)
    fail("ARMCI (ack)", "rank %d acked a message of kind %llu, which takes no acks here", source,
         static_cast<unsigned long long>(ack.kind));
  auto found = awaited_.find(AwaitedAck{source, static_cast<MessageKind>(ack.kind), ack.token});
  if (found == awaited_.end())
    fail("ARMCI (ack)", "rank %d acked a '%s' message (token 0x%llx) that was not sent to it or was acked already",
         source, kinds_[ack.kind].name.c_str(), static_cast<unsigned long long>(ack.token));
  if (--found->second == 0) awaited_.erase(found);
  kinds_[ack.kind].on_ack(source, ack.token);
  answered(source, static_cast<MessageKind>(ack.kind));
}

}  // namespace armci
