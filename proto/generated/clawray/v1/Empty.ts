// Original file: proto/common.proto


export interface Empty {
}

export interface Empty__Output {
}
