// Interns external user names (the OpenAI `user` field, an API key's owner) into the small
// dense TenantIds that the prefix cache and the eviction policy index their per-tenant state
// by. Dense ids keep that state O(tenants seen) instead of O(largest id); the cap keeps a flood
// of made-up user names from growing it without bound: past the cap, new names share one
// overflow tenant (their blocks are accounted together, which only makes them compete with
// each other for the fair share, never with the tenants already known).
// Thread-safe.
#pragma once

#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

#include "kv/eviction_policy.h"

namespace jisu {

class TenantRegistry {
 public:
  // Tenant 0 is "no user"; ids 1 .. max_tenants-2 are interned names; max_tenants-1 is the
  // overflow tenant. max_tenants >= 3.
  explicit TenantRegistry(int32_t max_tenants = 4096);

  TenantId Intern(std::string_view user);
  int32_t max_tenants() const { return max_tenants_; }
  TenantId overflow_tenant() const { return max_tenants_ - 1; }
  // Names interned so far (excluding the empty name and the overflow).
  size_t size() const;

 private:
  const int32_t max_tenants_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, TenantId> ids_;
};

}  // namespace jisu
