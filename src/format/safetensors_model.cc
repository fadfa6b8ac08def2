#include <sys/stat.h>

#include <map>
#include <utility>

#include "format/json_util.h"
#include "format/safetensors.h"
#include "format/text_util.h"

namespace jisu {
namespace {

bool IsRegularFile(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

// Shard names come from the index file; they must stay inside the model folder.
bool IsPlainFileName(const std::string& name) {
  return !name.empty() && name.find('/') == std::string::npos &&
         name.find('\\') == std::string::npos && name.find('\0') == std::string::npos &&
         name.find("..") == std::string::npos;
}

}  // namespace

Result<std::unique_ptr<SafetensorsModel>> SafetensorsModel::OpenDir(const std::string& dir) {
  std::unique_ptr<SafetensorsModel> model(new SafetensorsModel());
  const std::string prefix = dir.empty() || dir.back() == '/' ? dir : dir + "/";
  const std::string single = prefix + "model.safetensors";
  const std::string index_path = prefix + "model.safetensors.index.json";

  // Tensor name -> shard file the index assigns it to (empty for a single-file model).
  std::map<std::string, std::string, std::less<>> expected;
  std::vector<std::string> shard_names;
  if (IsRegularFile(single)) {
    shard_names.push_back("model.safetensors");
  } else if (IsRegularFile(index_path)) {
    JISU_ASSIGN_OR_RETURN(std::string text, ReadTextFile(index_path, 64u << 20));
    Result<nlohmann::json> index = ParseJson(text);
    if (!index.ok()) return index.status().WithContext(index_path);
    const auto wm = index->is_object() ? index->find("weight_map") : index->end();
    if (wm == index->end() || !wm->is_object()) {
      return Status::Corrupt(index_path + ": missing \"weight_map\" object");
    }
    std::map<std::string, size_t> shard_ids;
    for (const auto& [tensor, file] : wm->items()) {
      if (!file.is_string() || !IsPlainFileName(file.get<std::string>())) {
        return Status::Corrupt(index_path + ": tensor " + QuoteName(tensor) +
                               " maps to an invalid shard file name (must be a plain file name "
                               "inside the model folder)");
      }
      const std::string& shard = file.get_ref<const std::string&>();
      if (shard_ids.emplace(shard, shard_names.size()).second) shard_names.push_back(shard);
      expected.emplace(tensor, shard);
    }
    if (shard_names.empty()) return Status::Corrupt(index_path + ": empty weight_map");
  } else {
    return Status::NotFound(dir + ": no model.safetensors or model.safetensors.index.json");
  }

  std::map<std::string, std::string, std::less<>> owner;  // tensor -> shard holding it
  for (const std::string& shard : shard_names) {
    JISU_ASSIGN_OR_RETURN(std::unique_ptr<SafetensorsFile> file,
                          SafetensorsFile::Open(prefix + shard));
    for (const SafetensorsTensor& t : file->tensors()) {
      const auto [it, inserted] = owner.emplace(t.name, shard);
      if (!inserted) {
        return Status::Corrupt(dir + ": tensor " + QuoteName(t.name) + " appears in both " +
                               it->second + " and " + shard);
      }
      model->index_.emplace(t.name, &t);
    }
    model->shards_.push_back(std::move(file));
  }
  for (const auto& [tensor, shard] : expected) {
    const auto it = owner.find(tensor);
    if (it == owner.end() || it->second != shard) {
      return Status::Corrupt(index_path + ": tensor " + QuoteName(tensor) + " is listed in shard " +
                             shard + " but not found there");
    }
  }
  return model;
}

const SafetensorsTensor* SafetensorsModel::Find(std::string_view name) const {
  const auto it = index_.find(name);
  return it == index_.end() ? nullptr : it->second;
}

std::vector<std::string> SafetensorsModel::TensorNames() const {
  std::vector<std::string> names;
  names.reserve(index_.size());
  for (const auto& [name, tensor] : index_) names.push_back(name);
  return names;
}

}  // namespace jisu
