// Tests of ByteWriter and ByteReader: exact little-endian round trips, and every read past the end
// refused with an InputError that names the file and the field, whatever size is asked for.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "data/byte_reader.h"
#include "data/byte_writer.h"
#include "data/input_error.h"

namespace xmlt::data {
namespace {

constexpr uint64_t kMax64 = std::numeric_limits<uint64_t>::max();

struct Pair {
  uint32_t a;
  uint32_t b;
};

ByteReader ReaderOf(const ByteWriter& writer) { return ByteReader(writer.data(), writer.size(), "f.bin", "test file"); }

template <class T>
bool BitEqual(const T& a, const T& b) {
  return std::memcmp(&a, &b, sizeof(T)) == 0;
}

// Runs `read`, which must throw InputError for "f.bin" whose message names `field`; returns the
// message.
template <class F>
std::string ExpectTooShort(F read, const std::string& field) {
  try {
    read();
    ADD_FAILURE() << "no error reading " << field;
    return "";
  } catch (const InputError& e) {
    EXPECT_EQ(e.file(), "f.bin");
    EXPECT_EQ(e.line(), 0u);
    const std::string what = e.what();
    EXPECT_EQ(what.rfind("f.bin: test file too short: " + field + " needs ", 0), 0u) << what;
    return what;
  }
}

TEST(ByteIoTest, EveryValueTypeRoundTripsBitForBit) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  ByteWriter writer;
  writer.Append(uint8_t{0xAB});
  writer.Append(uint16_t{0xBEEF});
  writer.Append(uint32_t{0xDEADBEEF});
  writer.Append(kMax64 - 1);
  writer.Append(int32_t{-7});
  writer.Append(std::numeric_limits<int64_t>::min());
  writer.Append(-0.0f);
  writer.Append(1e-40f);  // subnormal
  writer.Append(nan);
  writer.Append(-2.5e300);
  writer.Append(Pair{1, 2});
  writer.AppendBytes("xyz", 3);
  writer.AppendBytes(nullptr, 0);
  EXPECT_EQ(writer.size(), 1u + 2 + 4 + 8 + 4 + 8 + 4 + 4 + 4 + 8 + 8 + 3);

  ByteReader reader = ReaderOf(writer);
  EXPECT_EQ(reader.Read<uint8_t>("u8"), 0xAB);
  EXPECT_EQ(reader.Read<uint16_t>("u16"), 0xBEEF);
  EXPECT_EQ(reader.Read<uint32_t>("u32"), 0xDEADBEEFu);
  EXPECT_EQ(reader.Read<uint64_t>("u64"), kMax64 - 1);
  EXPECT_EQ(reader.Read<int32_t>("i32"), -7);
  EXPECT_EQ(reader.Read<int64_t>("i64"), std::numeric_limits<int64_t>::min());
  EXPECT_TRUE(BitEqual(reader.Read<float>("zero"), -0.0f));
  EXPECT_TRUE(BitEqual(reader.Read<float>("subnormal"), 1e-40f));
  EXPECT_TRUE(BitEqual(reader.Read<float>("nan"), nan));
  EXPECT_EQ(reader.Read<double>("f64"), -2.5e300);
  const Pair pair = reader.Read<Pair>("pair");
  EXPECT_EQ(pair.a, 1u);
  EXPECT_EQ(pair.b, 2u);
  EXPECT_EQ(reader.offset(), writer.size() - 3);
  EXPECT_EQ(std::string(reader.ReadBytes(3, "text"), 3), "xyz");
  EXPECT_EQ(reader.ReadBytes(0, "nothing"), writer.data() + writer.size());
  EXPECT_EQ(reader.remaining(), 0u);
}

// The layout is the file format: least significant byte first, no padding between fields.
TEST(ByteIoTest, WriterLaysOutLittleEndianFieldsBackToBack) {
  ByteWriter writer;
  writer.Append(uint32_t{0x01020304});
  writer.Append(uint16_t{0x0506});
  writer.AppendBytes("AB", 2);
  writer.Append(uint64_t{0x0708});
  EXPECT_EQ(std::string(writer.data(), writer.size()),
            std::string("\x04\x03\x02\x01\x06\x05" "AB" "\x08\x07\0\0\0\0\0\0", 16));
}

TEST(ByteIoTest, ReadLastTakesTheTrailerAndEndsTheRangeBeforeIt) {
  ByteWriter writer;
  writer.Append(uint32_t{11});
  writer.Append(uint64_t{99});  // a trailing checksum, say
  ByteReader reader = ReaderOf(writer);
  EXPECT_EQ(reader.ReadLast<uint64_t>("checksum"), 99u);
  EXPECT_EQ(reader.remaining(), 4u);
  EXPECT_EQ(reader.Read<uint32_t>("count"), 11u);
  ExpectTooShort([&] { reader.Read<uint8_t>("past the trailer"); }, "past the trailer");
  ExpectTooShort([&] { reader.ReadLast<uint8_t>("second trailer"); }, "second trailer");
}

TEST(ByteIoTest, ReadsPastTheEndThrowNamingTheFileAndTheFieldAndMoveNothing) {
  ByteWriter writer;
  writer.Append(uint32_t{1});
  writer.Append(uint16_t{2});
  ByteReader reader = ReaderOf(writer);
  reader.Read<uint32_t>("version");
  ExpectTooShort([&] { reader.Read<uint32_t>("layer count"); }, "layer count");
  ExpectTooShort([&] { reader.ReadBytes(3, "name"); }, "name");
  ExpectTooShort([&] { reader.ReadLast<uint64_t>("checksum"); }, "checksum");
  const std::string what = ExpectTooShort([&] { reader.Read<uint64_t>("size"); }, "size");
  EXPECT_NE(what.find("size needs 8 bytes at offset 4, 2 remain"), std::string::npos) << what;
  // A refused read leaves the reader where it was.
  EXPECT_EQ(reader.offset(), 4u);
  EXPECT_EQ(reader.remaining(), 2u);
  EXPECT_EQ(reader.Read<uint16_t>("flags"), 2u);
}

// offset + count wraps around to exactly 0 for count 2^64 - offset, which a check of
// offset + count <= size would let through; the check must not add them.
TEST(ByteIoTest, LengthsNearTheTopOfUint64AreRefusedWithoutOverflow) {
  const std::string bytes(16, 'x');
  for (uint64_t skip : {0, 1, 8, 16}) {
    std::vector<uint64_t> counts = {kMax64, kMax64 - 1, uint64_t{1} << 63};
    if (skip > 0) counts.push_back(0 - skip);
    for (uint64_t count : counts) {
      SCOPED_TRACE("skip " + std::to_string(skip) + ", count " + std::to_string(count));
      ByteReader reader(bytes.data(), bytes.size(), "f.bin", "test file");
      reader.ReadBytes(skip, "start");
      ExpectTooShort([&] { reader.ReadBytes(count, "section data"); }, "section data");
      EXPECT_EQ(reader.offset(), skip);
    }
  }
}

TEST(ByteIoTest, EmptyRange) {
  ByteReader reader(nullptr, 0, "f.bin", "test file");
  EXPECT_EQ(reader.remaining(), 0u);
  EXPECT_EQ(reader.offset(), 0u);
  reader.ReadBytes(0, "nothing");  // asking for no bytes is always fine
  ExpectTooShort([&] { reader.Read<uint8_t>("magic"); }, "magic");
  ExpectTooShort([&] { reader.ReadBytes(1, "magic"); }, "magic");
  ExpectTooShort([&] { reader.ReadBytes(kMax64, "magic"); }, "magic");
  ExpectTooShort([&] { reader.ReadLast<uint64_t>("checksum"); }, "checksum");

  const ByteWriter empty;
  EXPECT_EQ(empty.size(), 0u);
  ByteReader from_writer = ReaderOf(empty);
  EXPECT_EQ(from_writer.remaining(), 0u);
}

}  // namespace
}  // namespace xmlt::data
