# syntax=docker/dockerfile:1
# tenantguard's image: the binary `make build` produces (static, CGO off), on
# distroless static as a non-root user. Build with `make image`.

FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
# The same command as outside the container, so the image runs the binary
# `make build` makes (tests/image_test.go checks that binary is static).
RUN make build VERSION=${VERSION}

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /src/bin/tenantguard /tenantguard
USER 65532:65532
EXPOSE 9443
ENTRYPOINT ["/tenantguard"]
CMD ["serve"]
