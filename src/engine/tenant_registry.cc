#include "engine/tenant_registry.h"

#include <algorithm>

namespace jisu {

TenantRegistry::TenantRegistry(int32_t max_tenants) : max_tenants_(std::max(max_tenants, 3)) {}

TenantId TenantRegistry::Intern(std::string_view user) {
  if (user.empty()) return 0;
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = ids_.find(std::string(user)); it != ids_.end()) return it->second;
  const auto next = static_cast<TenantId>(ids_.size() + 1);
  if (next >= overflow_tenant()) return overflow_tenant();
  ids_.emplace(std::string(user), next);
  return next;
}

size_t TenantRegistry::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return ids_.size();
}

}  // namespace jisu
