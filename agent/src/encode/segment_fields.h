/*
 * segment_fields.h - the field numbers of SkyWalking v3's SegmentObject, SpanObject,
 * SegmentReference, KeyStringValuePair and Log (proto/tracing.proto, proto/common.proto), for
 * the writers that encode them by hand: the segment encoder (segment_encode.c) and the crash
 * recorder's signal-safe writer (crash/crash_record.c).
 * The numbers are the wire contract with the OAP: they never change.
 */
#ifndef SW_ENCODE_SEGMENT_FIELDS_H
#define SW_ENCODE_SEGMENT_FIELDS_H

/* SegmentObject */
enum {
    SW__PB_SEGMENT_TRACE_ID = 1,
    SW__PB_SEGMENT_SEGMENT_ID = 2,
    SW__PB_SEGMENT_SPANS = 3,
    SW__PB_SEGMENT_SERVICE = 4,
    SW__PB_SEGMENT_INSTANCE = 5,
    SW__PB_SEGMENT_SIZE_LIMITED = 6,
};
/* SpanObject */
enum {
    SW__PB_SPAN_ID = 1,
    SW__PB_SPAN_PARENT = 2,
    SW__PB_SPAN_START = 3,
    SW__PB_SPAN_END = 4,
    SW__PB_SPAN_REFS = 5,
    SW__PB_SPAN_OP = 6,
    SW__PB_SPAN_PEER = 7,
    SW__PB_SPAN_TYPE = 8,
    SW__PB_SPAN_LAYER = 9,
    SW__PB_SPAN_COMPONENT = 10,
    SW__PB_SPAN_ERROR = 11,
    SW__PB_SPAN_TAGS = 12,
    SW__PB_SPAN_LOGS = 13,
    SW__PB_SPAN_SKIP = 14,
};
/* SegmentReference */
enum {
    SW__PB_REF_TYPE = 1,
    SW__PB_REF_TRACE_ID = 2,
    SW__PB_REF_SEGMENT_ID = 3,
    SW__PB_REF_SPAN_ID = 4,
    SW__PB_REF_SERVICE = 5,
    SW__PB_REF_INSTANCE = 6,
    SW__PB_REF_ENDPOINT = 7,
    SW__PB_REF_ADDRESS = 8,
};
/* KeyStringValuePair; Log */
enum {
    SW__PB_KV_KEY = 1,
    SW__PB_KV_VALUE = 2,
    SW__PB_LOG_TIME = 1,
    SW__PB_LOG_DATA = 2,
};

#endif /* SW_ENCODE_SEGMENT_FIELDS_H */
