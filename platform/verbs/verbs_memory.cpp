// The verbs layer: memory registration (through the registration cache),
// exposures and remote keys.
#include "platform/verbs/verbs_internal.hpp"

namespace armci::platform::verbs_detail {

// --------------------------------------------------------------------------
// memory

MemoryHandle VerbsNetwork::expose_memory(void* address, std::size_t length) {
  return register_range(address, length, false);
}

MemoryHandle VerbsNetwork::register_memory(void* address, std::size_t length) {
  return register_range(address, length, true);
}

MemoryHandle VerbsNetwork::register_range(void* address, std::size_t length, bool local_lookup) {
  auto reg = std::make_unique<Registration>();
  reg->begin = reinterpret_cast<std::uintptr_t>(address);
  reg->end = reg->begin + length;
  live_regs_.reserve(live_regs_.size() + 1);
  regs_.reserve(regs_.size() + 1);
  if (length > 0) {
    reg->mr = ibv_reg_mr(pd_, address, length, remote_access_ | IBV_ACCESS_LOCAL_WRITE);
    if (reg->mr == nullptr) {
      fail_errno("ibv_reg_mr of " + std::to_string(length) + " bytes");
    }
    if (local_lookup) {
      auto at = std::upper_bound(regs_.begin(), regs_.end(), reg->begin,
                                 [](std::uintptr_t b, const Registration* r) { return b < r->begin; });
      regs_.insert(at, reg.get());
      max_reg_length_ = std::max(max_reg_length_, length);
    }
  }
  live_regs_.insert(reg.get());
  return MemoryHandle{reg.release()};
}

void VerbsNetwork::deregister_memory(MemoryHandle handle) {
  if (!handle) return;
  auto* reg = static_cast<Registration*>(handle.impl);
  if (live_regs_.erase(reg) == 0) {
    throw std::logic_error("verbs network: deregister_memory of an unknown handle");
  }
  auto it = std::find(regs_.begin(), regs_.end(), reg);
  if (it != regs_.end()) regs_.erase(it);
  int rc = reg->mr != nullptr ? ibv_dereg_mr(reg->mr) : 0;
  delete reg;
  if (rc != 0) {
    errno = rc;
    fail_errno("ibv_dereg_mr");
  }
}

const Registration* VerbsNetwork::find_registration(const void* address,
                                                    std::size_t length) const {
  const auto a = reinterpret_cast<std::uintptr_t>(address);
  auto it = std::upper_bound(regs_.begin(), regs_.end(), a,
                             [](std::uintptr_t v, const Registration* r) { return v < r->begin; });
  // Registrations may overlap; only those starting within the longest
  // registration's reach below `a` can contain it.
  while (it != regs_.begin()) {
    --it;
    const Registration* r = *it;
    if (a - r->begin > max_reg_length_) break;
    if (r->end >= a + length) return r;
  }
  return nullptr;
}

std::vector<std::byte> VerbsNetwork::pack_remote_key(MemoryHandle handle) {
  if (!handle) throw std::invalid_argument("verbs network: pack_remote_key of a null handle");
  auto* reg = static_cast<Registration*>(handle.impl);
  if (live_regs_.count(reg) == 0) {
    throw std::logic_error("verbs network: pack_remote_key of an unknown handle");
  }
  PackedKey k{reg->begin, reg->end - reg->begin, reg->mr != nullptr ? reg->mr->rkey : 0,
              kKeyMagic};
  const auto* b = reinterpret_cast<const std::byte*>(&k);
  return {b, b + sizeof k};
}

RemoteKey VerbsNetwork::unpack_remote_key(int peer, std::span<const std::byte> packed) {
  peer_at(peer);  // connections are made on first use, not here
  PackedKey k;
  if (packed.size() != sizeof k) {
    throw std::invalid_argument("verbs network: packed remote key has the wrong size");
  }
  std::memcpy(&k, packed.data(), sizeof k);
  if (k.magic != kKeyMagic) {
    throw std::invalid_argument("verbs network: not a packed verbs remote key");
  }
  live_keys_.reserve(live_keys_.size() + 1);
  auto* impl = new KeyImpl{k.address, k.length, k.rkey, peer};
  live_keys_.insert(impl);
  return RemoteKey{impl};
}

void VerbsNetwork::release_remote_key(RemoteKey key) {
  if (!key) return;
  auto* impl = static_cast<KeyImpl*>(key.impl);
  if (live_keys_.erase(impl) == 0) {
    throw std::logic_error("verbs network: release_remote_key of an unknown key");
  }
  delete impl;
}

}  // namespace armci::platform::verbs_detail
