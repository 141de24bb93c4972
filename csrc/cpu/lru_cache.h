// A bounded, thread-safe LRU map from a key to a shared, immutable value: the oneDNN primitive
// caches of gemm.cpp and conv.cpp. Values are shared_ptr so that one evicted while another
// thread still uses it stays alive until that use ends.
#pragma once

#include <cstddef>
#include <list>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <utility>

namespace amp::cpu {

template <class Key, class Value, class Hash, size_t kCapacity>
class LruCache {
 public:
  std::shared_ptr<const Value> find(const Key& key) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = index_.find(key);
    if (it == index_.end()) return nullptr;
    lru_.splice(lru_.begin(), lru_, it->second);
    return it->second->second;
  }

  // Returns the value stored for `key`: `value`, or the one another thread inserted first.
  std::shared_ptr<const Value> insert(const Key& key, std::shared_ptr<const Value> value) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = index_.find(key);
    if (it != index_.end()) return it->second->second;
    lru_.emplace_front(key, std::move(value));
    index_.emplace(key, lru_.begin());
    if (lru_.size() > kCapacity) {
      index_.erase(lru_.back().first);
      lru_.pop_back();
    }
    return lru_.front().second;
  }

 private:
  using Entry = std::pair<Key, std::shared_ptr<const Value>>;
  std::mutex mutex_;
  std::list<Entry> lru_;  // most recently used first
  std::unordered_map<Key, typename std::list<Entry>::iterator, Hash> index_;
};

}  // namespace amp::cpu
